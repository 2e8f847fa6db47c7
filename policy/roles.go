package policy

import (
	"fmt"
	"strings"
)

// Role is what an argument's value is to the tool that receives it. Text
// patterns are matched by role: a shell command that runs and a Makefile
// that is written can hold the same words, and only the first runs them.
type Role uint8

const (
	// RoleOther is an argument no convention or declaration names: text
	// patterns see it, as they see every role but content (fail closed).
	RoleOther Role = iota
	RoleCommand
	RoleCode
	RoleQuery
	RolePath
	RoleURL
	// RoleContent is free text a tool writes somewhere (a file's
	// contents, a message's body). Text patterns see it only where a
	// rule says so (roles = ["content"], or an argument rule naming it).
	RoleContent
	// RoleIdentifier names a thing the tool acts on (an entity, an issue
	// number, a repository): text patterns see it like any role but
	// content.
	RoleIdentifier
	roleCount
)

var roleNames = [roleCount]string{"other", "command", "code", "query", "path", "url", "content", "identifier"}

func (r Role) String() string {
	if r < roleCount {
		return roleNames[r]
	}
	return fmt.Sprintf("role(%d)", r)
}

// Roles lists every role's name, for messages and documentation.
func Roles() []string { return roleNames[:] }

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	for i, n := range roleNames {
		if s == n {
			return Role(i), nil
		}
	}
	return 0, fmt.Errorf("%q is not a role; use %s", s, oneOf(roleNames[:]))
}

// RoleSet is a set of roles.
type RoleSet uint8

// Has reports whether r is in the set.
func (s RoleSet) Has(r Role) bool { return s&(1<<r) != 0 }

// With is the set with r added.
func (s RoleSet) With(r Role) RoleSet { return s | 1<<r }

// TextRoles are the roles a text pattern of deny, refuse,
// requires_approval or a risk rule sees when no rule names roles: all
// but content.
const TextRoles RoleSet = 1<<RoleOther | 1<<RoleCommand | 1<<RoleCode | 1<<RoleQuery | 1<<RolePath | 1<<RoleURL |
	1<<RoleIdentifier

// roleByName are the argument names whose role a convention gives,
// compared in SnakeName form.
var roleByName = map[string]Role{
	// What runs. (A command-named value is parsed as a shell command line
	// when it looks like one; shell_arguments declares others.)
	"command": RoleCommand, "cmd": RoleCommand, "script": RoleCommand, "shell": RoleCommand,
	"cmdline": RoleCommand, "command_line": RoleCommand, "commands": RoleCommand,
	"code": RoleCode, "source_code": RoleCode, "program": RoleCode, "snippet": RoleCode,
	"sql": RoleQuery, "query": RoleQuery, "sql_query": RoleQuery, "statement": RoleQuery,
	"statements": RoleQuery, "cypher": RoleQuery, "sparql": RoleQuery, "graphql": RoleQuery,
	// Where.
	"path": RolePath, "paths": RolePath, "file": RolePath, "files": RolePath, "filename": RolePath,
	"file_name": RolePath, "filepath": RolePath, "file_path": RolePath, "dir": RolePath,
	"directory": RolePath, "folder": RolePath, "source": RolePath, "destination": RolePath,
	"src": RolePath, "dst": RolePath, "dest": RolePath, "target": RolePath, "cwd": RolePath,
	"working_directory": RolePath, "root": RolePath,
	"url": RoleURL, "uri": RoleURL, "urls": RoleURL, "uris": RoleURL, "href": RoleURL,
	"link": RoleURL, "endpoint": RoleURL,
	// What is written.
	"content": RoleContent, "contents": RoleContent, "file_content": RoleContent, "new_content": RoleContent,
	"text": RoleContent, "body": RoleContent, "message": RoleContent, "new_text": RoleContent,
	"old_text": RoleContent, "new_string": RoleContent, "old_string": RoleContent,
	"replacement": RoleContent, "description": RoleContent, "comment": RoleContent, "note": RoleContent,
	"notes": RoleContent, "markdown": RoleContent, "html": RoleContent, "patch": RoleContent,
	"diff": RoleContent, "summary": RoleContent, "title": RoleContent, "subject": RoleContent,
}

// RoleByConvention is the role an argument's own name gives it (the
// last part of its path, in SnakeName form); RoleOther when its name
// says nothing. Names ending in _path, _file, _dir are paths, in _url or
// _uri URLs.
func RoleByConvention(name string) Role {
	if r, ok := roleByName[name]; ok {
		return r
	}
	switch {
	case strings.HasSuffix(name, "_path") || strings.HasSuffix(name, "_file") || strings.HasSuffix(name, "_dir") ||
		strings.HasSuffix(name, "_directory"):
		return RolePath
	case strings.HasSuffix(name, "_url") || strings.HasSuffix(name, "_uri"):
		return RoleURL
	}
	return RoleOther
}

// runsIn are path names that say where a tool runs, not where it writes:
// a tool told only these is not a tool that writes (terminal(text, cwd)
// runs its text).
var runsIn = map[string]bool{"cwd": true, "working_directory": true, "working_dir": true, "workdir": true, "root": true}

// NamesWhereItWrites reports whether an argument of this name and role
// tells a tool where it writes (a path or a URL, but not the directory
// it runs in).
func NamesWhereItWrites(name string, r Role) bool {
	return r == RoleURL || r == RolePath && !runsIn[name]
}

// ContentFor says whether a tool may receive content at all: content is
// text written somewhere, so a content-named argument is content only
// for a tool that creates or updates, or one that is told where it
// writes (it has a path or URL argument, NamesWhereItWrites). For any
// other tool (one that
// runs something, deletes, or says nothing of where) such an argument is
// RoleOther, and text patterns see it.
func ContentFor(category Category, hasWhere bool) bool {
	switch category {
	case Create, Update:
		return true
	case Delete:
		return false
	}
	return hasWhere
}

// RoleSpec is one declared role ([servers.arguments], shell_arguments):
// the arguments it names, for the calls of one server (Server "" : any).
type RoleSpec struct {
	Server string
	Spec   ArgumentSpec
	Role   Role
}
