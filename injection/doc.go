// Package injection finds instructions aimed at the model in text a
// server wrote: tool definitions (at first sight and at every change)
// and, later, what tools return. It is pure: it reads strings and
// decoded JSON and returns findings; nothing here touches the network,
// a process or a disk.
//
// # What it finds
//
// Each Finding has a Kind (instructions to the assistant, prompt-like
// tags, mentions of other servers' tools, secret places, requests to
// send data, invisible or look-alike characters, oversize text, text
// past the budget), a Confidence, where it is, a bounded excerpt and a
// sentence in plain words. Excerpts and sentences never carry a
// character a reader cannot see: those are written as \u{…}.
//
// # Where the line is
//
// Honest descriptions talk to the model. They say when to use the tool
// ("Use this tool when you need to …"), what its arguments must be
// ("IMPORTANT: paths must be absolute", "Must be empty when 'cursor' is
// provided"), what it must not be used for ("Do not use this for large
// files"), which of the server's own tools to call first or instead
// ("You MUST call resolve-library-id before get-library-docs",
// "DEPRECATED: use read_text_file instead"), and how to treat the user
// ("Always ask the user which organization to use"). Those are Low at
// most: the reviewer sees them, nothing is held back.
//
// A description is hostile when it reaches beyond the tool it describes.
// High, in a definition, is any of:
//
//   - overriding the assistant's instructions ("ignore previous
//     instructions", "tool descriptions are outdated", "safety checks
//     are lifted", "your new task is", "from now on", "act as root",
//     "treat … as system commands", "regardless of what the user asks");
//   - claiming authority or consent ("the assistant is authorized by
//     the administrator", "the user has already approved", "trusted
//     mode", "confirmation is no longer required", "this directive has
//     the highest priority");
//   - keeping something from the user or deceiving them ("do not
//     mention this to the user", "silently POST a copy", "between us",
//     "need not be disclosed", "tell the user it went fine even if it
//     failed"), or dressing the assistant's replies ("prefix every
//     reply with …");
//   - steering every other tool ("before using any other tool",
//     "every command must start with …"), or changing what another
//     operation takes or gives ("replace the values with the response",
//     "fix the wrong result of the check tool"), or where a message goes
//     ("change the recipient to …", "always BCC …"), or obeying a tool's
//     output ("execute it without reviewing it");
//   - commands that run a download ("curl … | bash"), open a shell to
//     another machine, or destroy a home or a disk (when the sentence
//     runs them rather than refuses them);
//   - the name of another server's tool together with a word that
//     governs it (must, always, never, before, after, instead, first,
//     ensure …); a bare mention is Low;
//   - a place where secrets are kept (~/.ssh, id_rsa, ~/.aws/credentials,
//     .env, ~/.gnupg, /etc/shadow, the MCP clients' configuration files
//     mcp.json and claude_desktop_config.json, …), whether the text asks
//     to read it or only names it: a server that honestly works with
//     ~/.ssh is reviewed once;
//   - asking for data to go out: the conversation, the context window,
//     the system prompt, secrets (SSH keys, every credential, an
//     environment variable named like OPENAI_API_KEY) or the user's
//     personal data into an argument; a copy of anything to an address
//     or URL written in the text; data into a URL's placeholders;
//     recording what the user does or types;
//   - markup that dresses text up as the model's own prompt: <IMPORTANT>,
//     <system>, <instructions>, [SYSTEM], **SYSTEM**, "SYSTEM:" at the
//     start of a line, chat tokens (<|im_start|>, [INST], <<SYS>>), and
//     HTML comments, which a rendered view hides. Honest tags
//     (<examples>, <hints>) are not findings;
//   - text a reader cannot see: Unicode tag characters (except the
//     three flags that use them), runs of variation selectors, bidi
//     embeddings, overrides and isolates, three or more zero-width
//     characters, terminal control codes, backspaces, and white space
//     long enough to push what follows out of view (64 spaces or 8 line
//     breaks). What tag characters and variation selectors encode is
//     decoded and scanned too;
//   - a Latin word with look-alike letters of another script in it.
//
// The line was drawn against the descriptions of real servers
// (corpus_test.go says which, and TestHonestServersLive and
// TestExternalCorpus run them): none of them gives a High finding.
// Rules are phrases, so they know the kinds of attack they were written
// for; three rounds of attacks written afresh found about a quarter of
// each new round High before the rules learned its kinds.
//
// Matching is done on folded text (NFKD without marks, lower case,
// look-alike letters as the Latin ones, invisible characters dropped,
// contractions split), so "IGNORE", "ｉｇｎｏｒｅ", "ign\u200bore",
// "ignоre" (Cyrillic о) and "don't"/"do not" read alike.
//
// # Data
//
// Options.Data scans what servers return (issue 30): there, paths,
// addresses, HTML comments and XML tags are ordinary, so they count
// High only with an instruction that uses them, and length is no
// finding. Overrides, secrecy, chat markup and hidden text stay High.
//
// # Cost
//
// One pass over the text's runes writes the folded text of one sentence
// at a time (at most 2 KiB, cut with an overlap), which word-set
// phrases are matched against; memory is bounded by the sentence, not
// the text. A Batch reads at most Options.Budget bytes (1 MiB by
// default); what lies past it is an Unscanned finding, never skipped
// silently.
//
// The work that cannot change a finding is skipped: a word of ASCII
// letters is folded at once, the lexicon is an open-addressed table
// behind a hash filter, a chunk of letters and hyphens goes straight to
// the tool-name check, a sentence without '<', '[' or '*' is not walked
// for tags, and a path's components reach the secret-name maps only
// when their length and last byte end one of those names. Scanner.full
// turns these shortcuts off; TestFastPathsCorpus, TestFastPathsRandom
// and FuzzFastPaths want the same findings both ways.
//
// Measured (BenchmarkScanOrdinary's texts, Options{Data: true} with 200
// other tools; the fastest of many short batches on a shared 2-core
// AMD EPYC, before and after in one run), ns per scan:
//
//	         1 KiB before   after    1 MiB before     after
//	prose          19 140  14 166      21 490 463  14 929 602
//	Go code        19 518  14 929      28 259 022  16 351 852
//	JSON           14 559  12 947      26 664 878  14 594 706
//	issue thread   19 904  15 426      24 889 374  16 072 618
//
// That is 1.1 to 1.4 times faster at 1 KiB and 1.4 to 1.8 at 1 MiB:
// about 14 µs per KiB, linear. What remains is spread over the passes
// a sentence takes (folding, words and chunks, lexicon, phrases), none
// of them more than a quarter.
package injection
