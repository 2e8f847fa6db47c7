package verify

import (
	"context"
	"errors"
	"time"
)

// Kind says what a Request asks of the human.
type Kind string

const (
	// KindConfirmation asks a yes/no question: may this action run once?
	KindConfirmation Kind = "confirmation"
	// KindChallenge shows a verification code the human will type back.
	KindChallenge Kind = "challenge"
)

// Request is one thing to put in front of the human.
type Request struct {
	Kind Kind
	// Agent is the principal the request is about.
	Agent string
	// Operation is the operation name (or "execution check-in").
	Operation string
	// Action is the rendered action: server.tool with canonical arguments,
	// or the reported nextActionHint.
	Action string
	// Arguments are shown readably in a dialog; may be nil.
	Arguments map[string]any
	// Roles say what each argument is to the tool, by its name in
	// Arguments ("command", "code", "query", "path", "url", or another
	// role aqlguard knows): what runs and where it acts are shown first
	// and say what the call does. An argument not in it: its name says.
	Roles map[string]string
	// Reason says why a human is needed (the evaluator's reason).
	Reason    string
	Token     string // confirmation token (KindConfirmation)
	Challenge string // challenge id (KindChallenge)
	Code      string // verification code (KindChallenge); never logged
	Tier      string
	ExpiresAt time.Time
	// Client is the MCP client the agent runs in, as it names itself
	// ("" when unknown); Server and Tool name the downstream tool.
	Client, Server, Tool string
	// Steps is, for a step-limit check-in, how many more calls an
	// approval lets the agent make before it asks again.
	Steps int
	// Detail is shown as it is, line by line, after the arguments (the
	// diff of a changed tool definition).
	Detail string
	// AllowSession offers the human "allow this tool for this session"
	// besides "allow once" (KindConfirmation of a tool call whose decision
	// does not rest on its arguments).
	AllowSession bool
	// Forget offers the human "allow once, and forget what this session
	// has read" (a question about where data goes: the flows of the
	// session are cleared). Never with AllowSession.
	Forget bool

	// What the question says in words comes from these: the tool's
	// semantic category (READ, CREATE, UPDATE, DELETE, EXECUTE), the
	// evaluator stage that decided (pattern, safety_tier, ...), the rule
	// as the policy writes it, and the risk score (0..100).
	Category, Stage, Rule string
	// Does is what the tool does in words, as the guard believes it (its
	// effects, and where it has them from: a profile, the tool's own
	// schema, a guess from its name); "" for a call without a model.
	Does string
	Risk int
	// Commands are the commands the call's shell arguments would run,
	// shown before the arguments.
	Commands []string
	// Effects are what the tool does, as the guard's effect model says
	// (policy.Effect names: "read", "write", "delete", "execute",
	// "send", "unknown"; "none" for a tool that does nothing outside
	// itself); nil when the call has no model. With Places and Roots
	// they choose the words of the question's first line (words.go):
	// "create the new file …", "overwrite … outside the folder you gave
	// the filesystem server", "send … to example.com".
	Effects []string
	// Places are where the call acts on this machine: its path
	// arguments, as aqlguard read them from disk.
	Places []Place
	// Roots are the folders the server was given (nil: none known).
	Roots []string
	// VerifyTool is the tool the model passes a code to, as the model
	// knows it (aqlguard_verify_challenge, mcp_aql_create, ...).
	VerifyTool string
}

// Place is one path a call acts on, as aqlguard read it.
type Place struct {
	// Arg is the argument it is in ("path", "destination").
	Arg string
	// Path is the absolute path the call names; Target, when not "",
	// where its links lead.
	Path, Target string
	// Looked says aqlguard looked the path up when it read the call,
	// and Exists what it found: a new file, or one that is there.
	Looked, Exists bool
	// Outside says it is outside every folder the server was given
	// (Roots known).
	Outside bool
}

// Summary is the request in one plain sentence, as a dialog's first line
// says it ("Claude Code wants to delete 3 files in ~/project with the fs
// server."); "" for a request that is not about one call.
func (r Request) Summary() string {
	if r.Server == "" || r.Operation == OperationToolChange || r.Operation == OperationToolReview {
		return ""
	}
	return summary(r)
}

// OperationToolChange is the Operation of a question about a server
// that changed a tool since it was approved (tool pinning).
const OperationToolChange = "tool change"

// OperationToolReview is the Operation of a question about a server seen
// for the first time, whose tools no shipped profile vouches for (tool
// pinning's first-sight review).
const OperationToolReview = "tool review"

// Answer is the human's reply to a confirmation question.
type Answer string

const (
	Allow Answer = "allow" // allow this action once
	// AllowSession allows this action and, from now on, every call of
	// the same tool in the same MCP session (only when it was offered).
	AllowSession Answer = "allow_session"
	// AllowForget allows this action and clears what the session has
	// read (only when it was offered: Request.Forget).
	AllowForget Answer = "allow_forget"
	Deny        Answer = "deny" // refuse it
	// None means no answer in time. It is not an approval.
	None Answer = "none"
)

// Channel reaches the human. Implementations must fail closed: when they
// cannot put the question in front of a human they return an error, and
// the caller treats that as no approval.
type Channel interface {
	// Name identifies the channel in logs and factors ("dialog", "command").
	Name() string
	// Ask puts a confirmation question to the human and waits for the
	// answer until ctx is done (then None).
	Ask(ctx context.Context, r Request) (Answer, error)
	// Show displays a verification code to the human.
	Show(ctx context.Context, r Request) error
}

// Reopener is a channel that shows a code in a window a person may close
// before they used it: the guard shows the code again at the agent's
// next refused call (once the window is closed). A channel that
// delivers a code elsewhere (the command channel: a pager, a spool) is
// not one; its program decides what delivery means, and a code is not
// delivered twice on an agent's retries.
type Reopener interface {
	Reopens() bool
}

// Reopens implements Reopener: a dialog is a window.
func (*DialogChannel) Reopens() bool { return true }

// ErrNoDisplay is returned by the dialog channel when it finds no
// graphical display to put a dialog on (FindDisplay), or the one it
// found does not answer: zenity would report either as a Cancel, which
// must not be mistaken for a human's answer. The error that wraps it
// says where aqlguard looked.
var ErrNoDisplay = errors.New("no graphical display")
