package secrets

import (
	"fmt"
	"slices"
)

// change is one of aqlguard's changes to gitleaks' ruleset, with the
// reason. gitleaks is written for repositories; tool results are
// issue trackers, API responses, logs and files a model reads, where a
// hash beside a field named cache_key is ordinary. Every change is
// tested (tuning_test.go): the text that made it necessary is no
// longer a finding and the rule's own true positives still are.
//
// A change that edits a rule names the regex it expects to find: when
// an update of the ruleset changes that rule, the change no longer
// applies, tune fails, and a human decides again.
type change struct {
	rule string // the rule's id
	why  string
	// One of these.
	regexFrom, regexTo string          // replace the regex
	allow              []tomlAllowlist // add allowlists
	drop               bool            // remove the rule
	add                *tomlRule       // a rule of aqlguard's own
}

var changes = []change{
	{
		rule: "generic-api-key",
		why: "Names that say something about a key rather than being one (its type, hash, id, " +
			"fingerprint, version, state, counts and timestamps), and keys that are no credentials " +
			"(idempotency, cache, partition and sort keys, object keys, pagination tokens), are " +
			"everywhere in API responses; with a hash or an id as their value gitleaks' generic rule " +
			"reports them. Also module and subresource-integrity hashes (go.sum's h1:, SRI's sha384-), " +
			"which a result from a package registry holds and gitleaks skips by file name; and prose " +
			"(\"post-quantum key exchange mechanisms:\" and, on the next line, an algorithm's name).",
		allow: []tomlAllowlist{
			{
				Description: "aqlguard: names of metadata about a credential",
				RegexTarget: "match",
				Regexes: []string{
					`(?i)(?:access|auth|api|credentials?|creds|key|passw(?:or)?d|secret|token)[\w.-]{0,20}?` +
						`(?:type|hash|digest|ids?|fingerprint|version|arn|name|method|level|count|state|challenge|` +
						`expires?(?:_?(?:at|in))?|(?:changed|created|updated|sent|used|rotated|issued|last_?used)_?(?:at|on|date)|` +
						`length|size|index|prefix|format|scopes?|usage|status|ttl|algorithm|alg|kind|label|description|hint|policy)` +
						`['"\x60]?[ \t]{0,3}(?:=|:|=>|,)`,
				},
			},
			{
				Description: "aqlguard: keys and tokens that are no credentials",
				RegexTarget: "match",
				Regexes: []string{
					`(?i)(?:idempotency|cache|object|s3|partition|sort|row|range|shard|routing|dedup(?:e|lication)?|lookup|` +
						`cursor|page|next_?page|continuation|pagination|sync|resume|composite|unique|surrogate|` +
						`translation|i18n|message|react)[_.-]?(?:key|token)`,
					`(?i)key[_.-]?stroke`,
				},
			},
			{
				Description: "aqlguard: prose, a keyword and two more words before a colon that ends the line",
				RegexTarget: "match",
				Regexes: []string{
					`(?i)(?:access|auth|api|credentials?|creds|key|passw(?:or)?d|secret|token)[\w.-]*(?:[ \t]+[a-z][\w.-]*){2,}:[ \t]*\r?\n`,
				},
			},
			{
				Description: "aqlguard: module and subresource-integrity hashes",
				RegexTarget: "match",
				Regexes: []string{
					`\bh1:[A-Za-z0-9+/]{43}=`,
					`\bsha(?:1|256|384|512)-[A-Za-z0-9+/]{27,86}={0,2}`,
				},
			},
		},
	},
	{
		rule:      "sourcegraph-access-token",
		why:       "Its last alternative is any 40 hex digits, which is every git commit name, in any text that mentions Sourcegraph (its keyword); the sgp_ forms stay.",
		regexFrom: `(?i)\b(\b(sgp_(?:[a-fA-F0-9]{16}|local)_[a-fA-F0-9]{40}|sgp_[a-fA-F0-9]{40}|[a-fA-F0-9]{40})\b)(?:[\x60'"\s;]|\\[nr]|$)`,
		regexTo:   `(?i)\b(\b(sgp_(?:[a-fA-F0-9]{16}|local)_[a-fA-F0-9]{40}|sgp_[a-fA-F0-9]{40})\b)(?:[\x60'"\s;]|\\[nr]|$)`,
	},
	{
		rule: "jwt",
		why:  "The example tokens of jwt.io (HS256, signed with the published key \"your-256-bit-secret\") are in countless issues and docs; they sign nothing anyone relies on.",
		allow: []tomlAllowlist{{
			Description: "aqlguard: jwt.io's example tokens, by their signatures",
			StopWords: []string{
				"SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
				"KMUFsIDTnFmyG3nMiGM6H9FNFUROf3wh7SmqJp-QV30",
			},
		}},
	},
	{
		rule: "database-url-password",
		why:  "gitleaks has no rule for a password in a database or broker URL (postgres://app:…@db), the way a config file or an environment dump hands one to a model.",
		add: &tomlRule{
			ID:          "database-url-password",
			Description: "A password in a database or message broker URL.",
			Regex: `(?i)\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|clickhouse|cockroachdb|couchdb|neo4j(?:\+s|\+ssc)?|jdbc:[a-z0-9]+)` +
				`://[^:/?#\s@'"]*:([^@/?#\s'"]{3,200})@[^\s/?#'"@]+`,
			SecretGroup: 1,
			Entropy:     1,
			Keywords: []string{"postgres", "mysql", "mariadb", "mongodb", "redis", "amqp", "mssql", "sqlserver",
				"clickhouse", "cockroachdb", "couchdb", "neo4j", "jdbc"},
			Allowlists: []tomlAllowlist{{
				Description: "aqlguard: placeholders and default passwords of examples",
				Regexes: []string{
					`^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\(.*\)|\{\{.*\}\}|<[^>]*>|\[[^\]]*\]|%[A-Za-z_][A-Za-z0-9_]*%|\*+|[xX]+|\.{3,}|_+|-+)$`,
					`(?i)^(?:pass(?:wd|word)?\d*|pwd|secret|changeme|change_?me|example|placeholder|your[\w-]*|my_?password|` +
						`root|admin|test|user|guest|postgres|mysql|redis|mongo(?:db)?|rabbitmq|default|demo|dev|local|app)$`,
				},
			}},
		},
	},
}

// tune applies changes to a freshly parsed ruleset. It reads and
// changes the rules' declarations: a regex it replaces or a list it
// adds is compiled with its rule.
func tune(rs *ruleset) error {
	for _, c := range changes {
		i := slices.IndexFunc(rs.specs, func(sp ruleSpec) bool { return sp.id == c.rule })
		if c.add != nil {
			if i >= 0 {
				return fmt.Errorf("secrets: tuning adds rule %s, which the ruleset has now", c.rule)
			}
			skip, err := skipReason(*c.add)
			if err != nil {
				return err
			}
			if skip != "" {
				return fmt.Errorf("secrets: tuning adds rule %s, which cannot apply: %s", c.rule, skip)
			}
			rs.specs = append(rs.specs, ruleSpec{id: c.add.ID, tr: *c.add})
			continue
		}
		if i < 0 {
			return fmt.Errorf("secrets: tuning changes rule %s, which the ruleset no longer has", c.rule)
		}
		sp := &rs.specs[i]
		switch {
		case c.drop:
			rs.specs = slices.Delete(rs.specs, i, i+1)
			rs.skipped[c.rule] = "dropped by aqlguard: " + c.why
			continue
		case c.regexFrom != "":
			if sp.tr.Regex != c.regexFrom {
				return fmt.Errorf("secrets: tuning of %s expects the regex %s; the ruleset has %s: review the change", c.rule, c.regexFrom, sp.tr.Regex)
			}
			sp.tr.Regex = c.regexTo
		}
		sp.tuned = append(sp.tuned, c.allow...)
	}
	return nil
}
