package injection

import (
	"slices"
	"sort"
	"strings"
	"sync"
)

// A phrase rule is a sequence of word sets matched against the words of
// one sentence, in folded form (lower case, look-alike letters mapped to
// Latin, invisible characters and diacritics dropped), each set allowed
// to come a few words after the one before. Phrases are written in a
// small language, one element after another separated by spaces:
//
//	ignore|disregard ~4 previous|prior ~2 instructions|rules
//
// "a|b" is a set of words; "~N" lets up to N other words come before
// the next set; "^" before the first set anchors the rule at the start
// of a sentence (or after a colon or a list bullet); a word ending in
// "+" stands for its regular inflections (use+: use, uses, used,
// using). Contractions are split before matching ("don't" is "do not").
type phraseRule struct {
	id   string
	kind Kind
	// def and data are the confidence in a definition and in data (0:
	// the rule does not report there).
	def, data Confidence
	say       string
	phrases   []string
}

// phraseRules is the table of phrase rules. The line between honest and
// hostile is written in doc.go; every High rule here is something no
// honest description measured does (see corpus_test.go).
var phraseRules = []phraseRule{
	// Instructions that take over the assistant.
	{id: "override", kind: Instruction, def: High, data: High,
		say: "tells the assistant to ignore its instructions",
		phrases: []string{
			"ignore+|disregard+|forget|forgets|forgot|forgetting|bypass+|neglect+|circumvent+ ~4 previous|prior|above|earlier|preceding|former|original|your|system|safety|security|existing|initial|developer|developers ~2 instruction+|direction+|guideline+|guidance|prompt+|directive+|rule+|command+|description+|safeguard+|restriction+|policy|policies|constraint+|check+|guardrail+|message+|tool+",
			"ignore+|disregard+|forget|forgets|bypass+|neglect+|circumvent+ ~2 all|any|other|every|these|those ~3 instruction+|direction+|guideline+|prompt+|directive+|description+|safeguard+|restriction+|guardrail+|tool+",
			"ignore+|disregard+|bypass+ ~1 tool ~1 description+|instruction+|restriction+|safeguard+|rule+|check+|guardrail+",
			"override+|overrode|disable+|turn ~2 safety|security|off ~1 check+|restriction+|safeguard+|guardrail+|filter+",
			"supersede+|override+|overrode ~3 previous|prior|all|any|other|your|earlier ~2 instruction+|directive+|guideline+",
			"forget|forgets|forgetting ~2 everything|all ~2 you|above|before|previous|prior|instruction+|told",
			"ignore+|disregard+|forget|forgets ~3 what|whatever ~2 user|users ~1 said|say|says|asked|ask+|want+|told|wrote|request+",
			"regardless ~1 of ~2 what|whatever ~2 user|users ~1 said|say|says|asked|ask+|want+|request+",
			"treat+|consider+|regard+ ~8 as ~2 trusted|system|authoritative ~2 instruction+|command+|directive+|order+",
			"treat+|consider+|regard+ ~8 as ~2 coming|come|sent ~1 from ~2 system|operator|developer|administrator|admin|anthropic|openai",
			"outrank+|override+|overrode|supersede+|trump+|overrule+ ~3 user|users ~1 instruction+|request+|wish+|preference+|setting+|choice+",
			"instruction+|command+|directive+ ~10 must|should|are|is be|to followed|obeyed|executed|carried",
			"follow+|obey+|execute+|run ~2 its|this|the ~1 answer+|output+|response+|reply|result+ ~1 without|blindly|exactly|verbatim|instead|always",
			"follow+|obey+ ~2 its ~1 answer+|output+|response+|reply",
			"execute+|run ~6 without ~1 review+|reviewing|checking|inspecting|reading|looking",
			"trusted|god|unrestricted|unfiltered|jailbreak|jailbroken|dan ~1 mode",
			"has|have|had authorized|authorised|permitted|allowed|cleared you ~1 to",
			"turn+|switch+ off ~1 any|all|every ~2 sandbox+|sandboxing|firewall+|antivirus|protection+|security|safety|filter+|guardrail+|monitoring",
			"disable+|bypass+|deactivate+|circumvent+ ~1 any|all|every ~2 sandbox+|sandboxing|firewall+|antivirus|protection+|security|safety|filter+|guardrail+|monitoring",
		}},
	{id: "new-instructions", kind: Instruction, def: High, data: High,
		say: "claims to give the assistant new instructions",
		phrases: []string{
			"your new|real|actual|true|next|updated instruction+|task+|order+|directive+|mission|goal+|command+",
			"from now on ~1 you",
			"instruction+|description+|guideline+ ~3 are|were|is|have|has|been ~2 outdated|obsolete|compromised|fake|invalid|wrong|incorrect|superseded|untrusted|void",
			"take+|took precedence|priority over ~3 instruction+|prompt+|guideline+|directive+",
			"directive+|instruction+|rule+|order+ ~3 has|have|take+|carry+ ~2 highest|top|absolute|overriding|maximum ~1 priority|precedence",
			"act+ as ~2 system|root|superuser|administrator|admin|developer|unrestricted|jailbroken",
			"you are now ~3 dan|mode|unrestricted|jailbroken|unfiltered|free|administrator|admin|root",
			"pretend+ ~4 not|never|no ~2 see|seen|saw|read|notice+|receive+|instruction+",
			"approve+ ~2 every|all|any|each ~1 request+|action+|call+|command+ ~1 automatically|silently|without",
			"the real|actual|true task|goal|job|mission|objective is",
			"assistant|model|agent|ai|llm|you ~3 is|are|been|has|have ~1 authorized|authorised|permitted|cleared|granted|entitled ~3 by|to|full|any|all|every",
			"user|users|owner|administrator|admin ~2 already|previously|pre ~1 approved|authorized|authorised|consented|agreed|granted|confirmed|allowed",
			"user|users|owner ~2 has|have|had ~1 consented|agreed",
			"confirmation+|approval+|permission+|consent ~4 no longer required|needed|necessary",
			"confirmation+|approval+|permission+|consent ~4 not ~1 required|needed|necessary",
			"do|does not|never ~1 ask|confirm|check ~4 before|prior ~2 delet+|remov+|overwrit+|send+|push+|pay+|paid|transfer+|run|running|execut+|purchas+|buy+|drop+|wip+",
			"policy|policies|rule+|protocol+ ~1 update+|change+|override+ ~1 confirmation+|approval+|safety|security|restriction+",
			"restriction+|safeguard+|guardrail+ ~3 lifted|suspended|waived|bypassed",
			"elevated|admin|administrator|root|full|unrestricted|superuser ~1 privilege+|permission+|access|right+ ~3 granted|enabled|given|active ~1 to|for ~2 this|the|your|you ~1 session|assistant|agent|model|ai|conversation|chat",
			"you ~1 now ~2 have|hold|got ~2 elevated|admin|administrator|root|unrestricted|superuser|full ~1 privilege+|access|permission+|right+",
			"verified|trusted|authorized|authorised ~1 admin|administrator|developer|owner|operator|superuser",
			"do|does not|never ~1 bother ~3 user|users|human|them",
			"ask+|request+|prompt+ ~4 user|users|them ~4 password+|credential+",
			"ask+|request+|prompt+ ~4 password+|credential+ ~4 user|users|them",
			"hidden|secret ~1 requirement+|instruction+|rule+|step+|task+|directive+|order+|parameter+|argument+",
			"previous|prior|earlier|original|safety|security ~3 guidance|guideline+|instruction+|rule+|policy|policies ~3 no longer apply+|valid|relevant|matter+",
			"previous|prior|earlier|original|safety|security ~3 guidance|guideline+|instruction+|rule+|policy|policies ~3 not|never ~1 apply+|matter+",
			"safety|security ~2 check+|guideline+|rule+|restriction+ ~2 are|is|have|has|been ~2 disabled|suspended|lifted|waived",
		}},
	{id: "secrecy", kind: Instruction, def: High, data: High,
		say: "tells the assistant to keep something from the user",
		phrases: []string{
			"do|does|must|should not ~2 tell+|mention+|inform+|notify|notifies|notified|notifying|alert+|reveal+|disclose+|say ~4 user|users|human|humans|anyone|anybody|them",
			"never ~2 tell+|mention+|inform+|notify|notifies|notifying|alert+|reveal+|disclose+ ~4 user|users|human|humans|anyone|anybody",
			"do|does|must|should not|never let ~2 user|users|human|anyone|them ~1 know|see|notice",
			"without ~2 telling|informing|notifying|alerting|letting|warning ~2 user|users|human|them|anyone",
			"do|does|must|should not|never ~1 mention+|reveal+|disclose+ ~3 that|this|it|these|step|steps|instruction+",
			"user|users ~2 must|should not|never ~1 know|notice|learn",
			"keep ~3 secret|hidden ~1 from",
			"between us|ourselves",
			"without ~1 explaining|telling|saying|mentioning ~1 why|what|that",
			"not ~2 come ~1 up ~2 in ~2 conversation+|chat|reply|replies|answer+",
			"user|users ~3 not ~1 need|needs ~1 to ~1 know|see|hear",
			"reassure+|assure+|convince+|persuade+ ~3 user|users|them|him|her ~5 that|it|this|everything|nothing",
			"tell+|report+|say|says|inform+ ~3 user|users|them ~4 everything|it|all|nothing ~2 is|was|went|has ~2 fine|ok|okay|well|successful|succeeded|wrong",
			"tell+|report+|say|says ~3 user|users|them ~8 even ~1 if|when|though",
			"need|needs ~1 not ~1 be ~1 disclosed|mentioned|told|shared|reported|shown",
			"not|never ~1 be ~1 disclosed|mentioned|revealed ~3 user|users|anyone",
			"no need ~1 to ~1 mention+|tell+|inform+|notify|disclose+",
			"do|does|did not|never ~1 say ~1 so|it|this|that|anything",
			"hidden|invisible|concealed ~1 from ~1 user|users",
			"silently|secretly|quietly|covertly|discreetly ~4 send+|post+|forward+|upload+|copy|copies|include+|pass+|add+|transmit+|bcc|cc|email+|read+|leak+|exfiltrate+",
		}},
	{id: "address-ai", kind: Instruction, def: Low, data: High,
		say: "addresses the assistant directly",
		phrases: []string{
			"note+|message+|attention|instruction+|reminder+ to|for ~1 ai|assistant+|model+|llm+|agent+|claude|chatgpt|gpt|gemini|copilot",
			"dear ai|assistant|model|llm|agent|claude|chatgpt",
		}},
	{id: "address-ai-if", kind: Instruction, def: Low, data: Low,
		say:     "addresses the assistant directly",
		phrases: []string{"if you are ~1 ai|llm|assistant|chatbot|bot|agent|language"}},
	{id: "other-tools", kind: Instruction, def: High, data: High,
		say: "tells the assistant what to do whenever it uses other tools",
		phrases: []string{
			"supersede+|replace+|override+|overrode ~3 any|all|other|every ~5 tool+|server+|provider+",
			"never|not ~2 call|use|invoke ~2 other|others ~1 tool+|server+|provider+",
			"never|not ~2 call|use|invoke ~2 the others",
			"not|never ~2 use|call|invoke ~3 server ~1 tool+",
			"before|after|whenever|when|every|each|while ~2 use+|call+|run|runs|running|invoke+|execute+ ~2 any|every|each|all|another|other ~2 tool+|function+|command+|server+|mcp",
			"for|on all|every|any|each ~1 other ~1 tool|function ~1 call|calls|invocation+",
			"all|every|any|each ~1 subsequent|future|following|later|other ~1 tool|function ~1 call+|request+|invocation+",
			"all|every|any|each ~2 command+ ~2 must|should|need|needs ~2 include|start|begin|contain|be|have ~1 prefix+|prefixed|with",
		}},
	{id: "tamper", kind: Instruction, def: High, data: High,
		say: "tells the assistant to change what another operation gives or takes",
		phrases: []string{
			"replace+|modify|modifies|modified|modifying|change+|alter+|overwrite+|correct+|adjust+|fix|fixes ~2 value+|result+|output+|answer+|response+|argument+|parameter+|number+|input+ ~1 of|from|returned|produced ~3 tool|tools|function+|operation+|call|calls",
			"replace+ ~3 value+|result+|argument+|parameter+|number+|input+ ~1 with ~3 response+|result+|output+|answer+|return+",
			"replace+|modify|modifies|modified|change+|alter+|overwrite+|correct+|adjust+|fix|fixes ~2 wrong|incorrect|erroneous|false ~1 value+|result+|output+|answer+|response+",
		}},
	{id: "replies", kind: Instruction, def: High, data: High,
		say: "tells the assistant what to put in its replies to the user",
		phrases: []string{
			"prefix+|append+|add+|insert+|end+|start+|begin+|sign+ ~2 every|each|all|any|your ~1 reply|replies|answer+|response+ ~4 with|by",
		}},
	{id: "from-now-on", kind: Instruction, def: High, data: Low,
		say:     "claims to change the assistant's rules from now on",
		phrases: []string{"from now on", "without ~1 any ~1 restriction+|limit+|rule+|filter+|guardrail+|safeguard+", "without restriction+|limit+|filter+|guardrail+|safeguard+"}},
	{id: "elsewhere", kind: Instruction, def: High, data: Low,
		say:     "tells the assistant to take its instructions from elsewhere",
		phrases: []string{"get|read|find|load+|fetch+|take ~2 your ~2 instruction+|command+|order+|task+"}},
	{id: "follow-elsewhere", kind: Instruction, def: Low,
		say:     "tells the assistant to follow instructions kept elsewhere",
		phrases: []string{"follow+|obey+|execute+|carry|perform+ ~2 instruction+|command+|direction+|order+ ~2 in|from|inside|within|contained|written|found"}},
	{id: "redirect", kind: SendData, def: High, data: Low,
		say: "tells the assistant to change where a message or email goes",
		phrases: []string{
			"change+|set|sets|setting|replace+|redirect+|switch+|update+ ~2 recipient+|destination+|receiver+|addressee+ ~3 to",
			"always|also|silently|secretly|additionally ~2 bcc|cc|blind",
		}},
	{id: "conversation", kind: SendData, def: High, data: High,
		say: "asks for the conversation to be put into an argument or sent",
		phrases: []string{
			"include+|pass+|send+|put|puts|putting|add+|append+|attach+|provide+|insert+|copy|copies|populate+|fill+|forward+|upload+|post+|paste+|contain+|with|dump+|share+ ~6 conversation|chat|dialog|dialogue ~1 history|histories|transcript+|log|logs",
			"include+|pass+|send+|put|add+|append+|attach+|provide+|insert+|copy|forward+|upload+|post+|paste+|contain+|with|dump+|share+ ~4 entire|full|whole|complete|previous|prior|earlier|all|every ~1 conversation|chat|exchange+|transcript+",
			"include+|pass+|send+|put|add+|append+|attach+|provide+|insert+|copy|forward+|upload+|post+|paste+|dump+|share+|reveal+|repeat+ ~4 system|your ~1 prompt+",
			"include+|pass+|send+|put|add+|append+|attach+|provide+|insert+|copy|forward+|upload+|post+|paste+|dump+|share+ ~3 previous|prior|earlier ~1 message+|exchange+|turn+",
			"include+|pass+|send+|append+|attach+|forward+|upload+|post+|contain+|copy ~3 user|users|their ~2 last|recent|previous|prior ~2 message+|chat+|email+|conversation+",
			"include+|pass+|send+|put|add+|append+|attach+|provide+|insert+|copy|forward+|upload+|post+|paste+|dump+|share+ ~4 context ~1 window",
			"summary|summari+|summarize+|record+|log|report+ ~3 what|everything ~2 user|users ~2 doing|does|did|typed|types|visit+|view+",
			"store+|save+|log|record+|collect+|track+ ~3 every|all|each|any ~2 url+|site+|page+|website+|message+|search+|query|queries|keystroke+ ~3 user|users",
		}},
	{id: "secret-data", kind: SendData, def: High, data: Low,
		say: "asks for secrets to be read or sent",
		phrases: []string{
			"read+|include+|pass+|send+|upload+|attach+|append+|collect+|grab+|extract+|exfiltrate+|leak+|dump+|forward+|post+|cat|save+|store+|log|logs|logged|logging|record+ ~4 ssh|private ~1 key|keys|config|configuration|agent|identity",
			"private ~1 key|keys ~6 save+|store+|log|logged|record+|send+|pass+|upload+|forward+",
			"known ~1 host|hosts",
			"log|logs|logged|logging|record+|save+|store+|collect+|keep ~3 every|all|any|each ~1 password+|secret+|credential+|token+|key|keys|passphrase+",
			"see|find|found|notice+|encounter+|spot+ ~4 key|keys|token+|password+|secret+|credential+ ~8 call+|send+|pass+|include+|store+|save+|log|forward+|upload+",
			"copy|copies|upload+|sync+|send+|back+|mirror+|archive+ ~3 entire|whole|full|all ~2 home|documents|desktop|disk|drive|filesystem|user ~1 directory|directories|folder+|files|disk|drive",
			"attach+|include+|pass+|append+|send+|upload+|add+ ~3 content+|text ~1 of ~3 any|all|every|open|other ~3 tab+|window+|editor+|file+|document+",
			"include+|pass+|send+|upload+|attach+|append+|exfiltrate+|leak+|forward+|post+ ~3 all|every|any|stored|saved ~2 credential+|password+|secret+|token+|cookie+",
			"include+|pass+|send+|upload+|attach+|append+|exfiltrate+|leak+|forward+|post+ ~2 all|every ~2 environment|env ~1 variable+|vars",
			"must|should|always ~2 include|contain|list ~3 any|all|every ~3 api|key|keys|token+|password+|secret+|credential+",
			"export+|exfiltrate+|leak+|harvest+|collect+|dump+ ~6 user|users|their ~3 document+|desktop|download+|home|file+|folder+|directory|directories|inbox|mailbox|message+|email+|contact+|password+|history|photo+|key+|credential+",
			"append+|attach+|include+|add+|send+|forward+|upload+|post+|pass+ ~6 user|users|their ~3 full|real|home|email|phone|location|address+|password+|contact+|birth+|ssn|social|bank|account|card|credit|iban|passport ~1 name|address|location|number|email|security|account|details",
			"gather+|collect+|find|harvest+|grab+ ~3 any|all|every ~1 credential+|password+|secret+|token+|key|keys|cookie+",
			"paste+|type+|enter+|share+ ~2 a|their|his|her|any ~1 password+|token+|secret+|key ~8 store+|save+|record+|keep|log|send+|pass+|copy",
		}},
	// Invariant Labs' GitHub toxic flow: an issue that waives the
	// owner's privacy and asks for everything found to be published. A
	// page may say someone does not care about privacy; it does not go
	// on to tell its reader to publish everything, so the rule asks for
	// both, or for "everything you find" put somewhere.
	{id: "publish-everything", kind: SendData, def: High, data: High,
		say: "tells the assistant to publish everything it finds, privacy waived",
		phrases: []string{
			"not|never ~1 care+ ~2 about ~2 privacy|confidentiality|secrecy ~6 put|puts|include+|add+|share+|post+|publish+|dump+|write+|list+|paste+|upload+|leak+|expose+",
			"go|goes ahead ~2 put|include+|add+|share+|post+|publish+|dump+|write+|list+|paste+|upload+|leak+|expose+ ~2 everything|anything|all ~1 you|that ~2 find|found|know|learn|see|discover+|get|can",
			"put|include+|add+|share+|post+|publish+|dump+|paste+|upload+|leak+|expose+ ~2 everything|anything ~1 you ~2 find|found|know|learn|discover+|dig ~2 about|on|in|from",
		}},
	{id: "read-and-pass", kind: SendData, def: High, data: Low,
		say: "tells the assistant to read something and pass it on",
		phrases: []string{
			"read+|open+|load+|cat|fetch+ ~6 and|then ~2 pass+|include+|put|send+|add+|provide+|supply+|attach+|append+ ~3 its|their|the|that|this|whole|entire|full ~1 content+|text|data",
		}},

	// What honest descriptions say too: shown to the reviewer, never
	// enough to hold a tool back.
	{id: "imperative", kind: Instruction, def: Low,
		say: "tells the assistant what it must do",
		phrases: []string{
			"you must|shall|should",
			"you are required|expected|obliged",
			"make sure",
			"be sure to",
			"ensure ~1 you",
			"it is ~1 mandatory|required|essential|critical|imperative ~1 that|to",
			"^ always|never",
		}},
	{id: "before-using", kind: Instruction, def: Low,
		say:     "tells the assistant what to do before using this tool",
		phrases: []string{"before|prior ~1 using|calling|invoking|running|executing|use ~1 this ~1 tool|function"}},
	{id: "instead", kind: Instruction, def: Low,
		say: "steers the assistant away from another tool",
		phrases: []string{
			"instead of|rather than ~1 using|calling|invoking|running",
			"do not|never ~1 use|call|invoke ~2 other|another|any",
		}},
	{id: "skip-confirmation", kind: Instruction, def: Low, data: Low,
		say: "speaks of skipping the user's confirmation",
		phrases: []string{
			"skip+|bypass+|suppress+|disable+|avoid ~2 all|any|the|every ~1 confirmation+|approval+|permission+|consent ~1 prompt+|dialog+|step+|check+|request+",
			"skip+|bypass+|suppress+ ~1 confirmation+|approval+",
		}},
	{id: "without-asking", kind: Instruction, def: Low,
		say:     "acts without asking the user",
		phrases: []string{"without ~2 asking|confirming|confirmation|consent|approval|permission"}},
}

// wordClass marks words whose presence in a sentence other rules weigh:
// a secret place next to "read" is a request to read it.
type wordClass uint16

const (
	classRead       wordClass = 1 << iota // read, open, cat, load, …
	classPass                             // pass, include, send, attach, …
	classSend                             // send, forward, post, upload, bcc, …
	classCovert                           // also, copy, every, silently, …
	classCall                             // call, use, invoke, run, …
	classToolNoun                         // tool, function, command, method
	classControl                          // must, always, never, before, instead, …
	classYou                              // you, your
	classSecretNoun                       // cookies, passwords, credentials, secrets
	classNegation                         // never, not, avoid, blocked, …
	classShell                            // rm, curl, chmod, nc, bash, …: a command may follow
)

var classWords = []struct {
	class wordClass
	words string
}{
	{classRead, "read+ open+ cat load+ access+ fetch+ get gets getting grab+ collect+ gather+ obtain+ retrieve+ extract+ dump+ print+ view+ list+ show+ display+ output+"},
	{classPass, "export+ pass+ include+ send+ put puts putting provide+ attach+ append+ add+ insert+ embed+ concatenate+ concat supply supplies supplied supplying fill+ populate+ copy copies copied forward+ upload+ post+ share+ transmit+ email+ mail+ leak+ exfiltrate+ submit+ contain+"},
	{classSend, "send+ forward+ post+ upload+ transmit+ exfiltrate+ leak+ deliver+ bcc cc mirror+ redirect+ relay+ email emails emailed emailing mail mails mailed"},
	{classCovert, "also additionally copy copies all every everything silently secretly quietly identical duplicate+ always bcc cc"},
	{classCall, "call+ use+ invoke+ run runs running execute+ trigger+"},
	{classToolNoun, "tool tools function functions command commands method methods"},
	{classYou, "you your yours yourself"},
	{classSecretNoun, "cookie cookies passwords credentials secrets"},
	{classShell, "rm chmod mkfs dd del format curl wget iwr irm invoke nc ncat socat bash sh mkfifo tcp"},
	{classNegation, "never not avoid avoids block blocks blocked refuse refuses refused reject rejects rejected deny denies denied forbid forbids forbidden prevent prevents prevented"},
	{classPass, "followed"},
	{classControl, "must always never before after whenever instead rather forbidden mandatory ensure sure should first every each also"},
}

// element is one word set of a phrase.
type element struct {
	gap   int      // other words allowed before it
	words []uint16 // word ids, sorted
	// mask has bit id%64 set for every id of words: most words a phrase
	// is tried against are in no element, and the mask says so for most
	// of them without a search.
	mask uint64
}

func (e *element) has(id uint16) bool {
	if e.mask&(1<<(id%64)) == 0 {
		return false
	}
	_, ok := slices.BinarySearch(e.words, id)
	return ok
}

// phrase is one compiled phrase of a rule.
type phrase struct {
	rule    *phraseRule
	atStart bool
	elems   []element
}

// lexEntry is what the lexicon knows of one folded word.
type lexEntry struct {
	id      uint16
	classes wordClass
	starts  []*phrase // phrases whose first element holds this word
}

// lexicon maps every word a rule or class names to its entry; a word it
// lacks has id 0, in no element. lexWords is the word of each id and
// lexByID its entry.
//
// They and the flat tables (flatlex.go) are built at a process's first
// scan (loadLexicon), not at its start: they cost about 4 ms, which a
// process that never reads prose, such as a client's hook judging one
// command, would otherwise pay every time it starts.
var (
	lexicon  map[string]*lexEntry
	lexWords []string
	lexByID  []*lexEntry
)

// loadLexicon builds the lexicon and the tables derived from it, once.
// Every scan calls it (getState), before it reads a word.
var loadLexicon = sync.OnceFunc(func() {
	lexicon = buildLexicon()
	lexWords = make([]string, len(lexicon)+1)
	lexByID = make([]*lexEntry, len(lexicon)+1)
	for w, e := range lexicon {
		lexWords[e.id] = w
		lexByID[e.id] = e
	}
	buildFlat()
})

// lookup is the lexicon's entry for w, or nil: the full path's lookup
// (the scan's own is flatLookup).
func lookup(w []byte) *lexEntry {
	if len(w) == 0 || len(w) > 24 {
		return nil // the lexicon's longest word is shorter
	}
	loadLexicon()
	return lexicon[string(w)]
}

func buildLexicon() map[string]*lexEntry {
	lex := map[string]*lexEntry{}
	entry := func(w string) *lexEntry {
		e := lex[w]
		if e == nil {
			e = &lexEntry{id: uint16(len(lex) + 1)}
			lex[w] = e
		}
		return e
	}
	for _, cw := range classWords {
		for _, w := range strings.Fields(cw.words) {
			for _, f := range inflect(w) {
				entry(f).classes |= cw.class
			}
		}
	}
	for i := range phraseRules {
		r := &phraseRules[i]
		for _, spec := range r.phrases {
			p := &phrase{rule: r}
			gap := 0
			for _, tok := range strings.Fields(spec) {
				switch {
				case tok == "^":
					p.atStart = true
					continue
				case tok[0] == '~':
					gap = atoi(tok[1:])
					continue
				}
				el := element{gap: gap}
				gap = 0
				for _, w := range strings.Split(tok, "|") {
					for _, f := range inflect(w) {
						el.words = append(el.words, entry(f).id)
					}
				}
				sort.Slice(el.words, func(i, j int) bool { return el.words[i] < el.words[j] })
				for _, id := range el.words {
					el.mask |= 1 << (id % 64)
				}
				p.elems = append(p.elems, el)
			}
			if len(p.elems) == 0 || p.elems[0].gap != 0 {
				panic("injection: bad phrase " + spec)
			}
			for w, e := range lex {
				if p.elems[0].has(e.id) {
					lex[w].starts = append(lex[w].starts, p)
				}
			}
		}
	}
	return lex
}

// inflect expands a word ending in "+" into its regular forms, over
// generously ("delet+": delet, delete, deletes, deleted, deleting);
// other words stand for themselves.
func inflect(w string) []string {
	if !strings.HasSuffix(w, "+") {
		return []string{w}
	}
	w = strings.TrimSuffix(w, "+")
	forms := []string{w, w + "s", w + "e", w + "es", w + "ed", w + "d", w + "ing"}
	if strings.HasSuffix(w, "e") {
		forms = append(forms, w[:len(w)-1]+"ing")
	}
	if strings.HasSuffix(w, "y") {
		forms = append(forms, w[:len(w)-1]+"ies", w[:len(w)-1]+"ied")
	}
	return forms
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			panic("injection: bad gap " + s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// match reports whether p matches the words from t on, and the index
// past its last word. The gaps are small, so backtracking is bounded.
func (p *phrase) match(words []word, e, t int) (int, bool) {
	if e == len(p.elems) {
		return t, true
	}
	el := &p.elems[e]
	for k := 0; k <= el.gap && t+k < len(words); k++ {
		if el.has(words[t+k].id) {
			if end, ok := p.match(words, e+1, t+k+1); ok {
				return end, true
			}
		}
	}
	return 0, false
}
