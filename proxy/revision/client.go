package revision

import (
	"encoding/json"

	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
)

// Discover is the answer to a 2026-07-28 client's server/discover: what
// initialize would have said (init, the session's initialize result),
// with the versions aqlguard speaks.
func Discover(init json.RawMessage, legacy []string) (json.RawMessage, error) {
	ms := rawjson.Members(init)
	out := map[string]json.RawMessage{}
	out["supportedVersions"], _ = json.Marshal(Supported(legacy))
	out["capabilities"] = ms["capabilities"]
	if raw, ok := ms["instructions"]; ok {
		out["instructions"] = raw
	}
	out["_meta"], _ = json.Marshal(map[string]json.RawMessage{MetaServerInfo: ms["serverInfo"]})
	return json.Marshal(out)
}

// Result completes a result of method for a 2026-07-28 client: its
// resultType, who answered (serverInfo: the server in transparent mode,
// aqlguard otherwise), and, where the server gave none, caching hints
// that say "do not cache" (ttlMs 0, private).
func Result(method string, res, serverInfo json.RawMessage) json.RawMessage {
	ms := rawjson.Members(res)
	if ms == nil {
		return res
	}
	out := res
	set := func(key string, value any) {
		if next, err := rawjson.Set(out, key, value); err == nil {
			out = next
		}
	}
	complete := true
	if raw, ok := ms["resultType"]; !ok {
		set("resultType", "complete")
	} else {
		complete = string(raw) == `"complete"`
	}
	// Interim results (input_required) carry no caching hints.
	if mcpmethod.Lookup(method).Cacheable && complete {
		if _, ok := ms["ttlMs"]; !ok {
			set("ttlMs", 0)
		}
		if _, ok := ms["cacheScope"]; !ok {
			set("cacheScope", "private")
		}
	}
	meta := ms["_meta"]
	if _, ok := rawjson.Members(meta)[MetaServerInfo]; !ok && method != mcpmethod.SubscriptionsListen {
		if meta == nil {
			meta = json.RawMessage(`{}`)
		}
		if next, err := rawjson.Set(meta, MetaServerInfo, serverInfo); err == nil {
			set("_meta", next)
		}
	}
	return out
}
