// A client as most MCP clients are built: the TypeScript SDK's Client over
// its StdioClientTransport, with the SDK's defaults — the minimal
// environment it gives the server it starts (no DISPLAY, no
// WAYLAND_DISPLAY, no DBUS_SESSION_BUS_ADDRESS) and its 60 s request
// timeout. e2e TestTypeScriptClientWithItsDefaults drives it.
//
//   node tsclient.mjs SDK_DIR COMMAND ARG...
//
// It prints one JSON line when connected ({"event":"ready", ...}), then
// reads one JSON line per call from stdin ({"name":..., "arguments":
// {...}}) and prints one JSON line per answer: {"event":"result", "ms",
// "result"} or {"event":"error", "ms", "message", "code"}. EOF on stdin
// closes the client.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [sdk, command, ...args] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(`${sdk}/dist/esm/${p}`).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport, getDefaultEnvironment } = await load("client/stdio.js");
const { DEFAULT_REQUEST_TIMEOUT_MSEC } = await load("shared/protocol.js");

const print = (o) => process.stdout.write(JSON.stringify(o) + "\n");

// No env: the SDK's default environment, as the Inspector and most
// clients built on the SDK start their servers.
const transport = new StdioClientTransport({ command, args });
const client = new Client({ name: "ts-sdk-client", version: "0.0.0" });
await client.connect(transport);
print({ event: "ready", env: Object.keys(getDefaultEnvironment()).sort(), timeout_ms: DEFAULT_REQUEST_TIMEOUT_MSEC });

let queue = Promise.resolve();
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  queue = queue.then(async () => {
    const req = JSON.parse(line);
    const began = Date.now();
    try {
      // No options: the SDK's default request timeout.
      const result = await client.callTool({ name: req.name, arguments: req.arguments });
      print({ event: "result", ms: Date.now() - began, result });
    } catch (e) {
      print({ event: "error", ms: Date.now() - began, message: String(e?.message ?? e), code: e?.code ?? null });
    }
  });
});
lines.on("close", () => {
  queue.then(() => client.close()).then(() => process.exit(0));
});
