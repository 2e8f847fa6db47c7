// Command testbrowser stands in for a person's browser in aqlguard's
// end-to-end tests ($BROWSER): it opens the address it is given, presses
// the consent page's one button, and follows the redirect back to
// aqlguard's loopback listener.
package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: testbrowser URL")
		os.Exit(2)
	}
	resp, err := http.Get(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbrowser:", err)
		os.Exit(1)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	form := url.Values{"approve": {"yes"}}
	for _, m := range regexp.MustCompile(`name="([^"]+)" value="([^"]*)"`).FindAllStringSubmatch(string(page), -1) {
		form.Set(m[1], m[2])
	}
	target, _ := url.Parse(os.Args[1])
	target.RawQuery = ""
	resp, err = http.PostForm(target.String(), form) // follows the redirect to aqlguard
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbrowser:", err)
		os.Exit(1)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Fprintf(os.Stderr, "testbrowser: %d %s", resp.StatusCode, body)
}
