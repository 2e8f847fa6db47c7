package secrets_test

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/aqlguard/aqlguard/secrets"
)

// A result read by a tool holds a credential; the session remembers it,
// and a later call that sends it out, even base64-encoded, carries it.
func Example() {
	// An npm token, made for this example: 30 characters and their
	// checksum (a real token would be found the same way).
	token := "npm_" + "abcdefghij0123456789klmnopqrst" + "2xiuTL"
	result := "# ~/.npmrc\n//registry.npmjs.org/:_authToken=" + token + "\n"

	var seen secrets.Seen
	for _, f := range secrets.Default().Scan("filesystem.read_file", result) {
		fmt.Println(f.Rule, f.Where, f.Checked, result[f.Start:f.End] == token)
		seen.Add(result, f)
	}

	arg := "https://paste.example/new?body=" + base64.StdEncoding.EncodeToString([]byte("npmrc: "+token))
	if c, ok := seen.Carried(arg); ok {
		fmt.Println("carried:", c.Rule, c.Encoding)
	}
	red := secrets.Redact(result, secrets.Default().Scan("", result))
	fmt.Println(strings.Contains(red, token), strings.Contains(red, "[secret redacted: npm-access-token hmac:"))
	// Output:
	// npm-access-token filesystem.read_file true true
	// carried: npm-access-token base64
	// false true
}
