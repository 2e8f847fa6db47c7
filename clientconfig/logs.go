package clientconfig

import (
	"os"
	"path/filepath"
)

// WhereLogs says where a client keeps what the servers it starts write
// to stderr, which is where aqlguard logs (a server's own stderr lines
// too, and why a server did not start): a path or the place in the
// client's window, for people. "" when it is not known. Claude
// Desktop's files are its own documented places; the others are the
// clients' output panels, as their MCP docs describe them.
func WhereLogs(env Env, client string) string {
	env = env.filled()
	switch client {
	case "claude-desktop":
		switch env.GOOS {
		case "darwin":
			return filepath.Join(env.Home, "Library", "Logs", "Claude") + "/mcp-server-NAME.log (NAME: the entry's name; mcp.log says when each started)"
		case "windows":
			dir := env.AppData
			if dir == "" {
				dir = `%APPDATA%`
			}
			return dir + `\Claude\logs\mcp-server-NAME.log (NAME: the entry's name; mcp.log says when each started)`
		default:
			// No Linux build of its own: the community builds keep the
			// macOS layout under ~/.config/Claude.
			dir := filepath.Join(env.ConfigHome, "Claude", "logs")
			if _, err := os.Stat(dir); err == nil {
				return dir + "/mcp-server-NAME.log (NAME: the entry's name)"
			}
			return "Claude Desktop has no Linux build of its own; a community build may keep " + dir + "/mcp-server-NAME.log"
		}
	case "cursor":
		return `Cursor's Output panel (View → Output), the "MCP Logs" channel; Settings → MCP shows each server's state`
	case "vscode":
		return `VS Code's Output panel: "MCP: List Servers" → the server → "Show Output"`
	case "claude-code":
		return "`claude --debug` prints each MCP server's start and its errors; /mcp shows each server's state"
	case "windsurf":
		return "Windsurf's Output panel (its MCP channel); not checked further"
	}
	return ""
}
