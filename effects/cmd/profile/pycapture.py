"""Run a Python MCP server's own code far enough to list its tools.

The Python servers (fetch, git, time, sqlite) cannot be installed here
(no PyPI), so `profile capture-python` runs their published source with
the real pydantic v2 and stand-ins for what is not here: the MCP Python
SDK's Server, stdio_server, Tool and ToolAnnotations, and the libraries
the tools use when called (git, httpx, markdownify, ...), which listing
never touches. The server's serve() runs as it would until it opens
stdio; then its list_tools handler is called and each Tool is dumped as
the SDK sends it: model_dump(by_alias=True, mode="json", exclude_none=True).

usage: python3 pycapture.py SERVER PACKAGE_DIR
  SERVER is fetch, git, time or sqlite; PACKAGE_DIR holds the server's
  package (mcp_server_fetch/...); prints {"tools": [...], "pydantic": V,
  "python": V} and, for the time server, "vary".

The time server writes the name of the machine's time zone into three
descriptions. Its tools are listed with "UTC", and "vary" says that the
definitions are those with 'UTC' replaced by any zone's name; that is
checked here by listing the tools under every zone Python knows.
"""

import asyncio
import importlib
import json
import sys
import tempfile
import types
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field


def stub(name, **attrs):
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, mod)
    return mod


class Anything:
    """Whatever a server imports but never uses to list its tools."""

    def __init__(self, *a, **k):
        pass

    def __call__(self, *a, **k):
        return Anything()

    def __getattr__(self, name):
        return Anything()


# The MCP SDK's tool models (mcp/types.py): the fields a server sets here,
# and the ones it leaves None, which exclude_none drops as the SDK does.
class ToolAnnotations(BaseModel):
    title: str | None = None
    readOnlyHint: bool | None = None
    destructiveHint: bool | None = None
    idempotentHint: bool | None = None
    openWorldHint: bool | None = None
    model_config = ConfigDict(extra="allow")


class Tool(BaseModel):
    name: str
    title: str | None = None
    description: str | None = None
    inputSchema: dict[str, Any]
    outputSchema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    meta: dict[str, Any] | None = Field(alias="_meta", default=None)
    model_config = ConfigDict(extra="allow")


class Captured(Exception):
    """Raised where the server would open stdio."""


class Server:
    list_tools_handler = None

    def __init__(self, *a, **k):
        self.request_context = Anything()

    def list_tools(self):
        def register(fn):
            Server.list_tools_handler = fn
            return fn

        return register

    def __getattr__(self, name):
        # list_prompts(), call_tool(), read_resource(), ...: decorators.
        return lambda *a, **k: (lambda fn: fn)

    def create_initialization_options(self, *a, **k):
        return None

    def get_capabilities(self, *a, **k):
        return None


class stdio_server:
    async def __aenter__(self):
        raise Captured()

    async def __aexit__(self, *exc):
        return False


def install_stubs():
    mcp_types = dict(
        Tool=Tool, ToolAnnotations=ToolAnnotations, INVALID_PARAMS=-32602, INTERNAL_ERROR=-32603,
    )
    for n in ("ErrorData", "GetPromptResult", "Prompt", "PromptArgument", "PromptMessage", "TextContent",
              "ImageContent", "EmbeddedResource", "ClientCapabilities", "ListRootsResult", "RootsCapability",
              "Resource"):
        mcp_types[n] = Anything
    stub("mcp")
    stub("mcp.types", **mcp_types)
    stub("mcp.server", Server=Server, InitializationOptions=Anything, NotificationOptions=Anything)
    stub("mcp.server.lowlevel", Server=Server, NotificationOptions=Anything)
    stub("mcp.server.stdio", stdio_server=stdio_server)
    stub("mcp.server.session", ServerSession=Anything)
    stub("mcp.shared")
    stub("mcp.shared.exceptions", McpError=Exception)
    # What the tools use when called.
    stub("git", Repo=Anything, NULL_TREE=None, InvalidGitRepositoryError=Exception)
    stub("git.exc", BadName=Exception)
    stub("markdownify", markdownify=Anything, ATX="atx")
    stub("readabilipy")
    stub("readabilipy.simple_json", simple_json_from_html_string=Anything)
    stub("protego", Protego=Anything)
    stub("tzlocal", get_localzone_name=lambda: None)


def list_tools(mod, server, local_tz="UTC"):
    Server.list_tools_handler = None
    if server == "fetch":
        run = mod.serve()
    elif server == "git":
        run = mod.serve(None)
    elif server == "time":
        run = mod.serve(local_tz)
    elif server == "sqlite":
        run = mod.main(tempfile.mkdtemp() + "/capture.db")
    else:
        sys.exit(f"unknown server {server}")
    try:
        asyncio.run(run)
    except Captured:
        pass
    if Server.list_tools_handler is None:
        sys.exit("the server registered no list_tools handler")
    tools = asyncio.run(Server.list_tools_handler())
    return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]


def main():
    server, package_dir = sys.argv[1], sys.argv[2]
    install_stubs()
    sys.path.insert(0, package_dir)
    mod = importlib.import_module(f"mcp_server_{server}.server")
    tools = list_tools(mod, server)
    out = {"tools": tools, "pydantic": pydantic.VERSION, "python": sys.version.split()[0]}
    if server == "time":
        import zoneinfo

        base = json.dumps(tools, ensure_ascii=False)
        zones = sorted(zoneinfo.available_timezones())
        for z in zones:
            want = json.loads(base.replace("'UTC'", f"'{z}'"))
            if list_tools(mod, server, z) != want:
                sys.exit(f"under time zone {z} the tools are not the UTC ones with the name replaced")
        out["vary"] = {"text": "'UTC'", "values": [f"'{z}'" for z in zones]}
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
