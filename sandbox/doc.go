// Package sandbox confines the stdio servers aqlguard starts to what
// their entries grant, with the operating system's own mechanism:
// Landlock on Linux (no root, no setuid helper), a sandbox-exec profile
// on macOS (generated text: see SBPL), nothing yet on Windows (said by
// doctor and the docs).
//
// A Grant is derived from the server's entry (Derive): what its command
// needs to run (its runtime's and its package's directories, the system's
// libraries and the few files of /etc that name resolution and TLS read,
// the runtime's caches), the places the entry names (the directories its
// arguments name, such as the filesystem server's, its roots, its
// [servers.sandbox] read and write), a private temporary directory, and
// the TCP ports it may connect to. The rest of the user's home is not in
// it: ~/.ssh, ~/.aws, the browser's profile, other projects.
//
// On Linux the grant is enforced by Launch: Go cannot run code between
// fork and exec, so the server is started from an OS thread of its own
// that is confined first (landlock_restrict_self applies to the calling
// thread, and a child inherits its creator's domain) and ends when the
// server does (its parent-death signal is tied to that thread). Nothing
// of aqlguard's other threads is confined, and no second program runs.
//
// Landlock refuses with EACCES (files) or EACCES/EPERM (connect, bind)
// and tells no one but the process refused. Refused (and a Watch over a
// running server) reads a server's stderr and its failed results for the
// paths and addresses it was refused, and says how to grant them.
package sandbox
