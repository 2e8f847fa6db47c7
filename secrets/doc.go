// Package secrets finds credentials in what tools return, and
// recognises them when a session later sends them out. It is pure: it
// reads strings and returns findings; nothing here touches the network,
// a process or a disk, and nothing it returns holds a secret.
//
//   - Scanner.Scan finds credentials in a text (Finding: the rule, where,
//     the byte offsets, whether the format's check verified it, a keyed
//     digest; never the secret).
//   - Redact replaces them with "[secret redacted: <rule> <digest>]".
//   - Digest names a secret by HMAC-SHA256 under a key drawn once per
//     process from crypto/rand: a short secret cannot be found from its
//     digest by guessing, and digests do not compare across processes.
//   - Seen remembers the secrets one session has seen and tells whether
//     an outgoing text carries one, plain or encoded (Carried names the
//     rule, the digest and the encoding).
//
// # The ruleset
//
// The rules are gitleaks' (MIT, github.com/zricethezav/gitleaks/v8
// v8.30.1, 222 rules): gitleaks/gitleaks.toml is its config/gitleaks.toml
// copied verbatim, with its license beside it, embedded and parsed with
// go-toml. No gitleaks package is imported. To take a newer release:
//
//	go run ./secrets/internal/updaterules v8.X.Y
//	go test ./secrets -run TestDefaultIndex -update
//	go test ./secrets/...
//
// The first also refreshes testdata/gitleaks/samples.txt, the literal true
// and false positives of gitleaks' own rule definitions, which the
// tests run. A feature the parser does not implement (composite rules,
// extend) is refused, and a rule changed under one of tuning.go's
// changes stops the tuning: a human looks again.
//
// Matching is gitleaks' detectRule, for a fragment without a file path
// or a commit: a rule runs when one of its keywords (case-folded) is in
// the text; its regex; the secret is its secretGroup, or the first group
// that matched; a secret of entropy at most the rule's is dropped; then
// the global allowlists and the rule's, with their targets (the secret,
// the match, the line), their stop words and their AND and OR
// conditions; then a generic finding whose secret a specific finding on
// the same line holds is dropped. What cannot apply to a text is set
// aside: the path-only rule (pkcs12-file), rules that need a file path
// to match (freemius-secret-key, hashicorp-tf-password,
// kubernetes-secret-yaml, nuget-config-password), allowlists of paths or
// commits alone and AND allowlists that name one.
//
// Where this differs from gitleaks, on purpose:
//
//   - gitleaks:allow on a line is not honoured: a result is what a server
//     wrote, and the signature would hide a secret from Seen.
//   - The line of a line-target allowlist is the match's line(s), at most
//     512 bytes on either side. gitleaks takes everything from the text's
//     start when the match is on the last line, so that an "import …
//     from" anywhere above hides a generic key below.
//   - Keywords are folded as ASCII, and K (KELVIN SIGN) and ſ (LONG S)
//     count as k and s, as Go's (?i) matches them; gitleaks lowers the
//     whole text with strings.ToLower, which also turns İ into i.
//   - Encoded text (base64, hex, percent) in a result is not decoded and
//     scanned again (gitleaks' --max-decode-depth); Seen does the
//     encodings on the way out.
//   - A text is read in windows of 64 KiB that overlap by 8 KiB, cut
//     after a line break; gitleaks reads a file in 100 KB chunks without
//     overlap. A match of a whole-window rule longer than the overlap may
//     be missed across a cut; an anchored rule reads past its window as
//     far as its longest match (64 KiB for an unbounded one).
//   - On a line with more than 64 specific findings, a generic one is
//     compared only with those that overlap it.
//
// # How the regexes run
//
// gitleaks runs every gated rule's regex over the whole text. In Go's
// regexp the semi-generic rules ([\w.-]{0,50}? before their keyword)
// cost about 300 µs per KB, and generic-api-key's keywords ("api",
// "key", "token", "auth", "access") are in nearly every result. Here
// (plan.go) most rules are tried only where their matches can begin:
// when every match of an alternative of the regex, after an optional
// lazy bounded run of one class, begins with one of a few strings (a
// keyword, or a literal prefix of 3 bytes or more), trying it anchored
// at each occurrence of those strings, extending the match left over
// the run, and merging the alternatives leftmost-first, finds exactly
// what FindAll finds. 209 of the 218 rules run so; the 9 others (their
// matches begin with a delimiter or ^) run gitleaks' way over each
// window, where their keyword is. TestPlansAgreeWithGitleaks and
// FuzzScan compare the two on every corpus text and on fuzzed texts.
//
// Before Go's regexp runs at an anchor, exists.go asks whether the
// regex can match there at all, by carrying sets of positions through
// its syntax tree; when no path reads past 320 bytes, Go's regexp gets
// just those and uses its backtracker. Allowlists are answered the same
// way, one alternative at a time, and only the alternatives whose
// required words the text holds. TestExistsAgreesWithRegexp checks the
// position sets against Go's regexp. When a rule's anchored regexes read
// more than twice its window past their anchors (an unbounded rule on a
// long line that repeats its keyword), the rest of the window runs
// gitleaks' way, which keeps the cost linear. Regexes are compiled on
// first use.
//
// # Checks
//
// A format with a check of its own must pass it; a token that fails is
// no secret, for its rule nor for the generic one (check.go):
//
//   - GitHub ghp_, gho_, ghu_, ghs_, ghr_ and npm npm_: 30 random base-62
//     characters and their CRC-32 in 6 base-62 characters (GitHub's
//     2021-04-05 and 2021-09-23 announcements; the alphabet and input are
//     pinned by tokens published after they expired).
//   - Grafana service account tokens glsa_…_<8 hex>: the CRC-32 of the
//     rest, little-endian (Grafana's satokengen).
//   - PyPI pypi-…: a macaroon in binary format 2 that parses to its end
//     (version, location, identifier, caveats, a 32-byte signature). Its
//     fixed prefix AgEIcHlwaS5vcmc, which the rule asks for, is only the
//     version and the location "pypi.org"; the signature is an HMAC
//     under PyPI's key, so the structure is what can be checked.
//   - JWT: a header that decodes to a JSON object naming "alg" and a
//     payload that decodes to one.
//
// Formats without one, and why: Slack's xox…- tokens (team and user ids
// and random characters, no check digit in the published format); AWS
// key ids (they encode an account id, no check digit); OpenAI's
// T3BlbkFJ and Anthropic's trailing AA are fixed markers the rules
// already require; GitLab's routable tokens end in a CRC-32 in base 36
// whose exact input GitLab does not document, so it is not guessed at;
// GitHub's fine-grained github_pat_ tokens, Stripe, Google API keys and
// the rest publish none.
//
// # Precision
//
// Ordinary texts are not secrets. testdata/ordinary (its README says
// where each text comes from) holds issue bodies, a commit log, design
// notes, Go's documentation and an HTML page of it, go.sum, an npm lockfile, minified JavaScript, Go source, API
// responses of GitHub and Linear, code and configuration that name keys
// and tokens without holding any, URLs, UUIDs, git names, SHA sums and
// integrity hashes; corpus_test.go adds hashes, ids and encodings of
// ordinary data as the values of fields such as cache_key, token_type
// or idempotency_key. TestOrdinaryTexts wants no finding in any of it.
// The changes to gitleaks' rules that this needed are in tuning.go,
// each with its reason and a test: generic-api-key learns names of
// metadata about keys (…_type, …_hash, …_id, …_fingerprint, timestamps)
// and keys that are no credentials (idempotency, cache, partition, sort,
// object keys, pagination tokens), module and integrity hashes, and
// prose ("key exchange mechanisms:" and a name on the next line);
// sourcegraph-access-token loses its bare 40-hex alternative (every git
// commit name); jwt.io's example tokens are allowed; and a rule of
// aqlguard's own, database-url-password, finds the password of a
// postgres://, mysql://, mongodb+srv://, redis://, amqp:// … URL, with
// placeholders and default passwords allowed.
//
// True positives: gitleaks' own samples (TestGitleaksSamples, each rule
// alone as gitleaks' Validate runs it; the few it decides otherwise are
// listed with the reason) and fakes of 25 credential families made at
// test time in each format's shape, with its checksum (TestFamilies;
// the repository holds no credential-shaped literal).
//
// # Seen
//
// Seen keeps each secret of at least MinSeenLen bytes in memory only,
// behind a pointer so that printing a Seen shows none, at most MaxSeen
// of them (Dropped counts the rest). Carried finds one in a text as it
// is, its base64 (standard or URL-safe, padded or not, at any alignment
// inside longer base64), its hex in any case, and any of those
// percent-encoded once or twice, wholly or partly, or form-encoded. It
// cannot see a secret split across arguments or cut short, other
// encodings or other orders of them (base32, hex of base64, base64 of a
// URL-encoded secret, JSON or HTML escapes), base64 broken into lines,
// another case, compression, encryption, or what a model rewrites.
//
// # Cost
//
// Measured on this machine (2 cores shared with other work, AMD EPYC,
// go1.26): CPU time per operation, which the load of the machine moves
// less than wall time (the benchmarks of bench_test.go give wall time;
// under a load of 12 it was 2 to 3 times these):
//
//	compiling the ruleset (Default's first call)   ~30 ms, 12.7 MB allocated, 2.3 MB kept
//	Scan, 1 KB of a GitHub issue (ordinary)        ~6 µs, 144 B, 18 allocs
//	Scan, 1 KB of Go source                        ~3.5 µs, 24 B, 3 allocs
//	Scan, 1 KB holding a GitHub token              ~20-30 µs, 1.5 KB, 47 allocs
//	Scan, 1 MiB of the ordinary corpus             ~7-10 ms (7-10 µs per KB), 260 KB
//	Carried, 1 KB argument, 10 seen secrets        ~3-4 µs, 0 B
//	Carried, the same percent-encoded              ~9 µs (wall), 1 KB
//
// Texts made to be hard (256 KiB each, wall time under load): a line
// repeating "curl" (an unbounded rule's anchors, which falls back to
// the whole-window way) ~190 ms; a key=value every 28 bytes ~110 ms
// (~11 µs for each of its 9,362 findings); private key headers without
// bodies ~30 ms.
package secrets
