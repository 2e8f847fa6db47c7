package paths

import (
	"slices"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		clean, home string
		want        string // part of the Reason; "" for no match
	}{
		{"/home/u/.ssh/id_rsa", home, "SSH"},
		{"/home/u/.ssh", home, "SSH"}, // listing it shows which keys there are
		{"/home/u/.ssh/config", home, "SSH"},
		{"/home/bob/.ssh/authorized_keys", home, "SSH"},
		{"/home/u/backup/id_ed25519", home, "SSH private key"},
		{"/home/u/backup/id_ed25519.pub", home, ""},
		{"/etc/shadow", home, "password hashes"},
		{"/etc/shadow-", home, "password hashes"},
		{"/etc/passwd", home, ""},
		{"/etc/sudoers.d/90-cloud", home, "as root"},
		{"/home/u/.aws/credentials", home, "AWS"},
		{"/home/u/.config/gcloud/application_default_credentials.json", home, "Google Cloud"},
		{"/home/u/proj/.env", home, ".env"},
		{"/home/u/proj/.env.production", home, ".env"},
		{"/home/u/proj/.env.example", home, ""},
		{"/home/u/proj/.ENV.Sample", home, ""},
		{"/home/u/proj/env.go", home, ""},
		{"/home/u/proj/key.pem", home, "private key"},
		{"/home/u/proj/certs/server.crt", home, ""},
		{"/home/u/.config/aqlguard/config.toml", home, "aqlguard"},
		{"/home/u/.local/state/aqlguard/state.db", home, "aqlguard"},
		{"/home/u/Library/Application Support/Google/Chrome/Default/Login Data", home, "browser"},
		{"/home/u/Library/Application Support/Firefox/Profiles/x.default/logins.json", home, "browser"},
		{"/home/u/.mozilla/firefox/x.default/cookies.sqlite", home, "browser"},
		{"/home/u/Library/Keychains/login.keychain-db", home, "keychain"},
		{"/proc/self/environ", home, "environment"},
		{"/proc/1234/task/1234/environ", home, "environment"},
		{"/home/u/proj/.git/hooks/pre-commit", home, "Git runs"},
		{"/home/u/proj/.git/HEAD", home, ""},
		{"/home/u/.bash_history", home, "histories"},
		{"/home/u/.zshrc", home, "shell runs"},
		{"/home/u/Library/Application Support/Claude/claude_desktop_config.json", home, "Claude Desktop"},
		{"/home/u/.claude.json", home, "Claude Code"},
		{"/home/u/proj/.mcp.json", home, "MCP configuration"},
		{"/home/u/proj/src/main.go", home, ""},
		{"/home/u/proj/README.md", home, ""},
		{"/", home, ""},
		{"/home/u", home, ""},
		// Case and compatibility forms are one (macOS, Windows,
		// case-folding mounts); lookalikes of other scripts name other
		// files, and .sshfoo is not .ssh.
		{"/home/u/.SSH/config", home, "SSH"},
		{"/Home/U/.AWS/credentials", home, "AWS"},
		{"/home/u/\uff0essh/config", home, "SSH"},
		{"/home/u/.s\u200bsh/config", home, "SSH"}, // a zero-width space hides nothing
		{"/home/u/.s\u0455h/config", home, ""},
		{"/home/u/.sshfoo/config", home, ""},
		{"/ETC/SHADOW", home, "password hashes"},
		// ~ patterns are the home directory's, and any directory's when
		// the home directory is not known.
		{"/home/bob/.config/gcloud/credentials.db", home, ""},
		{"/root/.config/gcloud/credentials.db", "", "Google Cloud"},
		{"/home/u/.vault-token", "", "Vault"},
		{"/vault-token", "", ""},
		{"/.config/gh/hosts.yml", "/", "GitHub CLI"},
	} {
		got, ok := Match(Shipped, tc.clean, tc.home)
		if tc.want == "" {
			if ok {
				t.Errorf("Match(%q, home %q) = %q (%s); want no match", tc.clean, tc.home, got.Pattern, got.Reason)
			}
			continue
		}
		if !ok || !strings.Contains(strings.ToLower(got.Reason), strings.ToLower(tc.want)) {
			t.Errorf("Match(%q, home %q) = %+v, %v; want a reason about %q", tc.clean, tc.home, got, ok, tc.want)
		}
	}
}

// Every shipped pattern matches the example of what it is for, itself
// (not only through another entry), and says why in words.
func TestShippedExamples(t *testing.T) {
	examples := map[string][]string{
		"~/.config/aqlguard/**":                    {"/home/u/.config/aqlguard/config.toml"},
		"~/.local/state/aqlguard/**":               {"/home/u/.local/state/aqlguard/aqlguard.db"},
		"/var/lib/aqlguard/**":                     {"/var/lib/aqlguard/aqlguard.db"},
		"/etc/aqlguard/**":                         {"/etc/aqlguard/managed.toml"},
		"/Library/Application Support/aqlguard/**": {"/Library/Application Support/aqlguard/managed.toml"},
		"**/claude_desktop_config.json":            {"/home/u/.config/Claude/claude_desktop_config.json"},
		"~/.claude.json":                           {"/home/u/.claude.json"},
		"~/.claude/.credentials.json":              {"/home/u/.claude/.credentials.json"},
		"**/.claude/settings{,.local}.json":        {"/home/u/.claude/settings.json", "/home/u/proj/.claude/settings.local.json"},
		"**/{.mcp.json,.cursor/mcp.json,.vscode/mcp.json,.gemini/settings.json}": {"/home/u/proj/.mcp.json",
			"/home/u/.cursor/mcp.json", "/home/u/proj/.vscode/mcp.json", "/home/u/.gemini/settings.json"},
		"~/.codeium/windsurf/mcp_config.json": {"/home/u/.codeium/windsurf/mcp_config.json"},
		"~/.codex/{config.toml,auth.json}":    {"/home/u/.codex/auth.json"},
		"**/.ssh/**":                          {"/home/u/.ssh/id_rsa", "/home/u/.ssh", "/root/.ssh/authorized_keys"},
		"**/{id_rsa,id_dsa,id_ecdsa,id_ed25519,id_ecdsa_sk,id_ed25519_sk}": {"/tmp/id_rsa", "/home/u/keys/id_ecdsa_sk"},
		"**/*.ppk":                                 {"/home/u/keys/server.ppk"},
		"**/.gnupg/**":                             {"/home/u/.gnupg/private-keys-v1.d/x.key"},
		"/etc/ssh/ssh_host_*_key":                  {"/etc/ssh/ssh_host_ed25519_key"},
		"/etc/ssl/private/**":                      {"/etc/ssl/private/ssl-cert-snakeoil.key"},
		"**/*.pem":                                 {"/home/u/Downloads/ec2.pem"},
		"**/*.key":                                 {"/srv/tls/server.key"},
		"**/*.{p12,pfx}":                           {"/home/u/cert.p12", "/home/u/cert.pfx"},
		"**/*.{jks,keystore}":                      {"/home/u/app/release.keystore"},
		"**/*.keytab":                              {"/etc/krb5.keytab"},
		"**/.aws/**":                               {"/home/u/.aws/credentials"},
		"~/.config/gcloud/**":                      {"/home/u/.config/gcloud/credentials.db"},
		"**/.azure/**":                             {"/home/u/.azure/msal_token_cache.json"},
		"~/.oci/**":                                {"/home/u/.oci/config"},
		"~/.config/doctl/**":                       {"/home/u/.config/doctl/config.yaml"},
		"**/.kube/config":                          {"/home/u/.kube/config"},
		"/etc/kubernetes/**":                       {"/etc/kubernetes/admin.conf"},
		"/{run,var/run}/secrets/**":                {"/run/secrets/db_password", "/var/run/secrets/kubernetes.io/serviceaccount/token"},
		"**/.docker/config.json":                   {"/home/u/.docker/config.json"},
		"~/.config/gh/**":                          {"/home/u/.config/gh/hosts.yml"},
		"~/.config/glab-cli/**":                    {"/home/u/.config/glab-cli/config.yml"},
		"~/.terraform.d/credentials*":              {"/home/u/.terraform.d/credentials.tfrc.json"},
		"~/.terraformrc":                           {"/home/u/.terraformrc"},
		"~/.vault-token":                           {"/home/u/.vault-token"},
		"~/.config/rclone/rclone.conf":             {"/home/u/.config/rclone/rclone.conf"},
		"~/{.s3cfg,.boto}":                         {"/home/u/.s3cfg", "/home/u/.boto"},
		"**/.netrc":                                {"/home/u/.netrc"},
		"**/.git-credentials":                      {"/home/u/.git-credentials"},
		"**/.npmrc":                                {"/home/u/.npmrc", "/home/u/proj/.npmrc"},
		"**/.pypirc":                               {"/home/u/.pypirc"},
		"~/.cargo/credentials{,.toml}":             {"/home/u/.cargo/credentials", "/home/u/.cargo/credentials.toml"},
		"~/.gem/credentials":                       {"/home/u/.gem/credentials"},
		"~/.m2/settings-security.xml":              {"/home/u/.m2/settings-security.xml"},
		"~/.gradle/gradle.properties":              {"/home/u/.gradle/gradle.properties"},
		"~/{.composer,.config/composer}/auth.json": {"/home/u/.composer/auth.json", "/home/u/.config/composer/auth.json"},
		"**/.pgpass":                               {"/home/u/.pgpass"},
		"**/.my.cnf":                               {"/home/u/.my.cnf"},
		"**/.env":                                  {"/home/u/proj/.env"},
		"**/.env.*":                                {"/home/u/proj/.env.local", "/home/u/proj/.env.production"},
		"**/.envrc":                                {"/home/u/proj/.envrc"},
		"~/.password-store/**":                     {"/home/u/.password-store/mail.gpg"},
		"**/*.kdbx":                                {"/home/u/Passwords.kdbx"},
		"~/Library/Keychains/**":                   {"/home/u/Library/Keychains/login.keychain-db"},
		"/Library/Keychains/**":                    {"/Library/Keychains/System.keychain"},
		"~/.local/share/{keyrings,kwalletd}/**":    {"/home/u/.local/share/keyrings/login.keyring", "/home/u/.local/share/kwalletd/kdewallet.kwl"},
		"~/{.mozilla,snap/firefox,.var/app/org.mozilla.firefox}/**": {"/home/u/.mozilla/firefox/profiles.ini",
			"/home/u/snap/firefox/common/.mozilla/firefox/x/logins.json"},
		"~/.config/{google-chrome,chromium,BraveSoftware,microsoft-edge,vivaldi,opera}/**": {"/home/u/.config/google-chrome/Default/Cookies",
			"/home/u/.config/BraveSoftware/Brave-Browser/Default/Login Data"},
		"~/{snap/chromium,.var/app/com.google.Chrome,.var/app/org.chromium.Chromium,.var/app/com.brave.Browser}/**": {"/home/u/snap/chromium/common/chromium/Default/Cookies"},
		"~/Library/Application Support/{Google/Chrome,Chromium,Firefox,BraveSoftware,Microsoft Edge,Vivaldi,Arc}/**": {
			"/home/u/Library/Application Support/Microsoft Edge/Default/Cookies"},
		"~/Library/{Safari,Cookies,Containers/com.apple.Safari}/**": {"/home/u/Library/Cookies/Cookies.binarycookies"},
		"/etc/{shadow,gshadow}*":                                    {"/etc/shadow", "/etc/gshadow-"},
		"/etc/{master.passwd,spwd.db}":                              {"/etc/master.passwd"},
		"/etc/sudoers{*,.d/**}":                                     {"/etc/sudoers", "/etc/sudoers.d/README"},
		"/proc/*/{environ,mem,task/*/environ,task/*/mem}":           {"/proc/1/environ", "/proc/self/mem", "/proc/1/task/2/environ"},
		"~/{.*_history,.history,.zhistory,.local/share/fish/fish_history}": {"/home/u/.bash_history", "/home/u/.psql_history",
			"/home/u/.local/share/fish/fish_history"},
		"~/{.bashrc,.bash_profile,.bash_login,.bash_logout,.profile,.zshrc,.zprofile,.zshenv,.zlogin,.zlogout,.config/fish/config.fish}": {
			"/home/u/.bashrc", "/home/u/.profile", "/home/u/.config/fish/config.fish"},
		"~/{.config/autostart,.config/systemd/user,Library/LaunchAgents}/**": {"/home/u/.config/autostart/x.desktop",
			"/home/u/Library/LaunchAgents/com.x.plist"},
		"**/.git/hooks/**":                  {"/home/u/proj/.git/hooks/pre-commit"},
		"**/.git/config":                    {"/home/u/proj/.git/config"},
		"~/{.gitconfig,.config/git/config}": {"/home/u/.gitconfig"},
	}
	list := ShippedList()
	for i, s := range Shipped {
		ex, ok := examples[s.Pattern]
		if !ok {
			t.Errorf("the shipped pattern %q has no example in this test", s.Pattern)
			continue
		}
		if s.Reason == "" || !strings.Contains(s.Reason, " ") {
			t.Errorf("the shipped pattern %q says no reason in words: %q", s.Pattern, s.Reason)
		}
		if err := CheckPattern(s.Pattern); err != nil {
			t.Errorf("the shipped pattern %q: %v", s.Pattern, err)
		}
		for _, clean := range ex {
			e := &list.entries[i]
			subj := subject{folded: clean}
			if rel, ok := strings.CutPrefix(clean, home+"/"); ok {
				subj.rel, subj.under = strings.ToLower(rel), true
			}
			subj.homeKnown = true
			subj.folded = strings.ToLower(subj.folded)
			if !e.match[0].matches(&subj) {
				t.Errorf("the shipped pattern %q does not match its example %q", s.Pattern, clean)
			}
			if _, ok := Match(Shipped, clean, home); !ok {
				t.Errorf("Match(Shipped, %q) found nothing", clean)
			}
		}
	}
	if len(examples) != len(Shipped) {
		t.Errorf("%d examples for %d shipped patterns (a pattern listed twice, or an example for one no longer shipped)", len(examples), len(Shipped))
	}
}

func TestCheckPattern(t *testing.T) {
	for p, want := range map[string]string{
		"~/work/secrets/**":       "",
		"/srv/keys/*.key":         "",
		"**/credentials.json":     "",
		"/srv/{a,b}/token":        "",
		"secrets/**":              "does not start with",
		".env":                    "does not start with",
		"~user/x":                 "does not start with",
		"{/a,/b}":                 "does not start with",
		"~/work//secrets/**":      "clean path",
		"~/a/../b":                "clean path",
		"/srv/keys/":              "clean path",
		"/srv/./keys":             "clean path",
		"/srv/[keys":              "syntax error",
		"/srv/{a,b":               "syntax error",
		"/srv/a\nb":               "control character",
		"/srv/\u202ekey.txt":      "direction mark",
		"":                        "does not start with",
		"/srv/secret\\[1\\]/file": "", // a glob escape, not a separator
	} {
		err := CheckPattern(p)
		switch {
		case want == "" && err != nil:
			t.Errorf("CheckPattern(%q) = %v; want nil", p, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("CheckPattern(%q) = %v; want an error about %q", p, err, want)
		}
	}
}

// A config's patterns add to the shipped ones; a list that does not
// compile matches everything, with the reason, so its caller asks.
func TestMatchConfigured(t *testing.T) {
	list := append(slices.Clone(Shipped), Sensitive{Pattern: "~/work/secrets/**", Reason: "configured"})
	for clean, want := range map[string]string{
		"/home/u/work/secrets/prod.json": "configured",
		"/home/u/work/secrets":           "configured",
		"/home/u/.ssh/id_rsa":            "SSH",
		"/home/u/work/public/x":          "",
	} {
		got, ok := Match(list, clean, home)
		if ok != (want != "") || !strings.Contains(got.Reason, want) {
			t.Errorf("Match(configured, %q) = %+v, %v; want %q", clean, got, ok, want)
		}
	}
	l, err := Compile(list)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := l.Match("/home/u/work/secrets/x", home); !ok || got.Reason != "configured" {
		t.Errorf("List.Match = %+v, %v", got, ok)
	}
	if _, err := Compile([]Sensitive{{Pattern: "relative/**", Reason: "x"}}); err == nil {
		t.Error("Compile took a relative pattern")
	}
	bad := []Sensitive{{Pattern: "/srv/[", Reason: "x"}}
	if got, ok := Match(bad, "/tmp/x", home); !ok || !strings.Contains(got.Reason, "does not compile") {
		t.Errorf("Match over a list that does not compile = %+v, %v; want a match that says why", got, ok)
	}
	if _, ok := (*List)(nil).Match("/home/u/.aws/config", home); !ok {
		t.Error("a nil List is not the shipped one")
	}
	if _, ok := Match(nil, "/home/u/.aws/config", home); ok {
		t.Error("an empty list matched")
	}
}

func TestGuard(t *testing.T) {
	g := Guard("/opt/aq/config.toml", "relative/state", "/srv/state[1]", "/x/../y", "")
	if len(g) != 2 {
		t.Fatalf("Guard = %+v; want the two absolute clean paths", g)
	}
	l, err := Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	for clean, want := range map[string]bool{
		"/opt/aq/config.toml":    true,
		"/opt/aq/config.toml.sw": false,
		"/srv/state[1]":          true,
		"/srv/state[1]/db":       true,
		"/srv/state1/db":         false,
	} {
		if _, ok := l.Match(clean, home); ok != want {
			t.Errorf("Guard list: Match(%q) = %v, want %v", clean, ok, want)
		}
	}
}

// BenchmarkMatch: what the shipped list costs a path argument, for the
// common case (a project file: no match, every pattern tried) and a hit.
func BenchmarkMatch(b *testing.B) {
	for _, clean := range []string{"/home/u/proj/src/components/Button.tsx", "/home/u/.ssh/id_rsa"} {
		b.Run(clean, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				shipped.Match(clean, home)
			}
		})
	}
}

// TestProjectPlaces: an application's .env is a place its project keeps
// (Project), but only where no other entry names the path, and a
// config's own entry for it is not.
func TestProjectPlaces(t *testing.T) {
	const home = "/home/u"
	cases := []struct {
		path    string
		project bool
		reason  string
	}{
		{"/home/u/proj/.env", true, ".env file"},
		{"/home/u/proj/.env.production", true, ".env file"},
		{"/home/u/proj/.envrc", true, "direnv"},
		{"/home/u/.aws/.env", false, "AWS"},
		{"/home/u/.ssh/.env", false, "SSH"},
		{"/home/u/.config/aqlguard/.env", false, "aqlguard"},
	}
	for _, c := range cases {
		s, ok := ShippedList().Match(c.path, home)
		if !ok || s.Project != c.project || !strings.Contains(s.Reason, c.reason) {
			t.Errorf("%s: %v %+v, want project=%v and a reason with %q", c.path, ok, s, c.project, c.reason)
		}
	}
	own := MustCompile(append(slices.Clone(Shipped), Sensitive{Pattern: "**/.env", Reason: "the team asks"}))
	if s, ok := own.Match("/home/u/proj/.env", home); !ok || s.Project || s.Reason != "the team asks" {
		t.Errorf("a config's **/.env: %v %+v, want the config's entry", ok, s)
	}
}

// TestMustCompileFailsClosed: a list MustCompile is given compiles at
// its first match; one that does not compile after all makes every
// path sensitive, with the reason, rather than none or a crash.
func TestMustCompileFailsClosed(t *testing.T) {
	l := MustCompile([]Sensitive{{Pattern: "~/.ssh/**", Reason: "keys"}, {Pattern: "[", Reason: "broken"}})
	for _, p := range []string{"/", "/srv/app/README.md", "/home/u/.ssh/id_rsa"} {
		s, ok := l.Match(p, "/home/u")
		if !ok || !strings.Contains(s.Reason, "does not compile") {
			t.Errorf("Match(%q) = %+v, %v; want every path in, with the reason", p, s, ok)
		}
	}
	good := MustCompile([]Sensitive{{Pattern: "~/.ssh/**", Reason: "keys"}})
	if _, ok := good.Match("/srv/app/README.md", "/home/u"); ok {
		t.Error("a valid list matched a path it does not name")
	}
	if s, ok := good.Match("/home/u/.ssh/id_rsa", "/home/u"); !ok || s.Reason != "keys" {
		t.Errorf("a valid list: %+v, %v", s, ok)
	}
}
