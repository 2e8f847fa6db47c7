package evaluator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/policy/paths"
)

// TestPlacesJudged (issue 29, item 3): a call's paths are judged against
// its server's roots and the sensitive places, by what the tool does.
func TestPlacesJudged(t *testing.T) {
	p := defaultPolicy(t)
	const home, root = "/home/u", "/home/u/proj"
	place := func(raw string) Place {
		lex := paths.Canonical(raw, home, root)
		return Place{Arg: "path", Lexical: lex, Resolved: lex}
	}
	linked := func(raw, to string) Place {
		pl := place(raw)
		pl.Resolved = paths.Canonical(to, home, root)
		return pl
	}
	cases := []struct {
		name    string
		effects string
		pl      Place
		roots   []string
		want    Decision
		why     string
	}{
		{"a read inside", "read", place("/home/u/proj/main.go"), []string{root}, Allow, ""},
		{"a relative read inside", "read", place("src/main.go"), []string{root}, Allow, ""},
		{"a write inside", "write", place("/home/u/proj/new.txt"), []string{root}, Allow, ""},
		{"a read outside, plain", "read", place("/usr/share/dict/words"), []string{root}, Allow, ""},
		{"a write outside", "write", place("/home/u/.bashrc2"), []string{root}, NeedsConfirm, "outside the srv server's roots"},
		{"a write with no roots known", "write", place("/home/u/proj/x"), nil, NeedsConfirm, "no roots are known"},
		{"a climb out", "read", place("/home/u/proj/../other/secret.txt"), []string{root}, NeedsConfirm, `climbs out with ".."`},
		{"a climb that stays inside", "read", place("/home/u/proj/a/../b.txt"), []string{root}, Allow, ""},
		{"an SSH key", "read", place("~/.ssh/id_ed25519"), []string{root}, NeedsConfirm, "it reads /home/u/.ssh/id_ed25519: SSH private keys"},
		{"a cloud credential", "read", place("/home/u/.aws/credentials"), []string{"/"}, NeedsConfirm, "it reads /home/u/.aws/credentials"},
		{"/etc/shadow", "read", place("/etc/shadow"), []string{"/"}, NeedsConfirm, "/etc/shadow"},
		// An application's .env is its project's own (issue 30): inside
		// the roots it runs, read or edited; the flow judgement follows it.
		{"a .env inside the root", "read", place("/home/u/proj/.env"), []string{root}, Allow, ""},
		{"a .env inside the root, edited", "write", place("/home/u/proj/.env.production"), []string{root}, Allow, ""},
		{"a .env outside the root", "read", place("/home/u/other/.env"), []string{root}, NeedsConfirm, "it reads /home/u/other/.env: a .env file"},
		{"a .env climbing out", "read", place("/home/u/proj/../other/.env"), []string{root}, NeedsConfirm, "a .env file"},
		{"a .env with no roots known", "read", place("/home/u/proj/.env"), nil, NeedsConfirm, "a .env file"},
		{"a .env inside, a link to one outside", "read", linked("/home/u/proj/.env", "/home/u/other/.env"), []string{root}, NeedsConfirm, "a link to /home/u/other/.env"},
		{"a .env inside, a link to a key", "read", linked("/home/u/proj/.env", "/home/u/.ssh/id_rsa"), []string{root}, NeedsConfirm, "SSH"},
		{"a .env the roots hold under a key's place", "read", place("/home/u/.aws/.env"), []string{home}, NeedsConfirm, "AWS credentials"},
		{"a .env under a root of /", "read", place("/srv/app/.env"), []string{"/"}, Allow, ""},
		{"a link inside to a key", "read", linked("/home/u/proj/k", "/home/u/.ssh/authorized_keys"), []string{root}, NeedsConfirm, "a link to"},
		{"a link inside to outside, written", "write", linked("/home/u/proj/out", "/tmp/elsewhere"), []string{root}, NeedsConfirm, "a link to /tmp/elsewhere"},
		{"not one place", "read", place("/proj/a\x00b"), []string{root}, NeedsConfirm, "cannot be read as one place"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Step{Principal: "default", Operation: "srv_tool", Server: "srv", Tool: "tool", Category: policy.Read,
				Effects: effects(t, c.effects), EffectSource: policy.SourceProfile, Modeled: true,
				Roles: map[string]policy.Role{"path": policy.RolePath}, Arguments: map[string]any{"path": c.pl.Lexical.Raw},
				Places: []Place{c.pl}, Roots: c.roots, RootsKnown: len(c.roots) > 0, Home: home, StepNumber: 1}
			d := Evaluate(p, s)
			if d.Decision != c.want {
				t.Fatalf("%s, want %s: %s", d.Decision, c.want, d.Reason)
			}
			if c.why != "" && !strings.Contains(d.Reason, c.why) {
				t.Errorf("the reason %q does not say %q", d.Reason, c.why)
			}
		})
	}
}

// TestPathValuesReadRolesAsTheDecisionDoes: the strings the front reads
// as places are those the decision reads in a path role, nested ones
// and array elements included; an undeclared argument named "path" is
// none.
func TestPathValuesReadRolesAsTheDecisionDoes(t *testing.T) {
	s := Step{Server: "fs", Tool: "move", Operation: "fs_move", Modeled: true, EffectSource: policy.SourceProfile,
		Effects:   effects(t, "write"),
		Roles:     map[string]policy.Role{"source": policy.RolePath, "destination": policy.RolePath, "paths": policy.RolePath},
		Arguments: map[string]any{"source": "/a", "destination": "/b", "paths": []any{"/c", "/d"}, "path": "/not-declared"}}
	var got []string
	for _, v := range PathValues(nil, s) {
		got = append(got, v.Arg+"="+v.Raw)
	}
	want := "destination=/b paths=/c paths=/d source=/a"
	if strings.Join(got, " ") != want {
		t.Errorf("PathValues = %v, want %s", got, want)
	}
}

// TestURLsJudged: a request for a cloud instance's metadata address asks
// (credentials are handed out there), whatever the spelling.
func TestURLsJudged(t *testing.T) {
	p := defaultPolicy(t)
	for url, want := range map[string]Decision{
		"http://169.254.169.254/latest/meta-data/iam/security-credentials/": NeedsConfirm,
		"http://[fd00:ec2::254]/latest/":                                    NeedsConfirm,
		"http://metadata.google.internal./computeMetadata/v1/":              NeedsConfirm,
		"169.254.169.254:80/latest":                                         NeedsConfirm,
		"https://go.dev/doc/effective_go":                                   Allow,
	} {
		s := Step{Principal: "default", Operation: "web_fetch", Server: "web", Tool: "fetch", Category: policy.Read,
			Effects: effects(t, "send"), EffectSource: policy.SourceProfile, Modeled: true,
			Roles: map[string]policy.Role{"url": policy.RoleURL}, Arguments: map[string]any{"url": url}, StepNumber: 1}
		if d := Evaluate(p, s); d.Decision != want {
			t.Errorf("%s: %s, want %s (%s)", url, d.Decision, want, d.Reason)
		}
	}
}

// TestResourceQuestions: a resource URI that climbs with ".." or says it
// holds secrets asks; an ordinary one does not.
func TestResourceQuestions(t *testing.T) {
	for uri, asks := range map[string]bool{
		"document://../../.ssh/id_rsa":       true,
		"document://notes/%2e%2e/%2e%2e/etc": true,
		"internal://credentials":             true,
		"vault://team/api-key":               true,
		"docs://tokenizer/readme":            false,
		"file:///srv/readme.txt":             false,
		"file:///notes/secret-plan.txt":      false,
		"memo://insights":                    false,
	} {
		if got := Read("s", uri).Unresolved != ""; got != asks {
			t.Errorf("%s: asks %v, want %v (%q)", uri, got, asks, Read("s", uri).Unresolved)
		}
	}
}

// TestSendingGivenText: a tool known only from its own words that sends
// text it is given out of the machine asks; one a profile describes, or
// one that sends only its URL, runs.
func TestSendingGivenText(t *testing.T) {
	p := defaultPolicy(t)
	for _, c := range []struct {
		source policy.EffectSource
		roles  map[string]policy.Role
		want   Decision
	}{
		{policy.SourceSchema, map[string]policy.Role{"recipient": policy.RoleOther, "body": policy.RoleContent}, NeedsConfirm},
		{policy.SourceProfile, map[string]policy.Role{"recipient": policy.RoleOther, "body": policy.RoleContent}, Allow},
		{policy.SourceSchema, map[string]policy.Role{"url": policy.RoleURL}, Allow},
	} {
		s := Step{Principal: "default", Operation: "mail_send_email", Server: "mail", Tool: "send_email", Category: policy.Execute,
			Effects: effects(t, "send"), EffectSource: c.source, Modeled: true, Roles: c.roles,
			Arguments: map[string]any{}, StepNumber: 1}
		if d := Evaluate(p, s); d.Decision != c.want {
			t.Errorf("%s %v: %s, want %s (%s)", c.source, c.roles, d.Decision, c.want, d.Reason)
		}
	}
}

// TestTopLevelPathsAsTheWalk: the shortcut that reads top-level path
// arguments straight gives what the walk of every value gives.
func TestTopLevelPathsAsTheWalk(t *testing.T) {
	roles := map[string]policy.Role{"path": policy.RolePath, "paths": policy.RolePath, "file_path": policy.RolePath, "mode": policy.RoleOther}
	for _, args := range []map[string]any{
		{"path": "/a"},
		{"paths": []any{"/b", "/a", 3}, "mode": "x"},
		{"filePath": "/c", "file_path": "/d", "path": "/e"},
		{"path": 7, "paths": []any{}},
		{},
	} {
		s := Step{Server: "fs", Tool: "t", Operation: "fs_t", Modeled: true, EffectSource: policy.SourceProfile,
			Effects: effects(t, "read"), Roles: roles, Arguments: args}
		fast, ok := topLevelPaths(nil, &s)
		if !ok {
			t.Fatalf("%v: no shortcut", args)
		}
		names := namesOf(s)
		var walked []PathValue
		for _, v := range subjectsWith(s, names, nil, true, newRoles(nil, &s, names)).Values {
			if v.Role == policy.RolePath && v.String && !v.Key && !v.Derived {
				walked = append(walked, PathValue{Arg: v.Path, Raw: v.Raw})
			}
		}
		if fmt.Sprint(fast) != fmt.Sprint(walked) {
			t.Errorf("%v: shortcut %v, walk %v", args, fast, walked)
		}
	}
}
