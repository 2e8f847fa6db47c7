package revision

import (
	"encoding/json"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
)

// clientKeys are the _meta keys that speak of the client in 2026-07-28;
// to a server initialized in 2025-11-25 they mean nothing (and one that
// also speaks 2026-07-28 would take them as a switch of revision
// mid-session), so they are not sent there.
var clientKeys = map[string]bool{MetaProtocolVersion: true, MetaClientInfo: true,
	MetaClientCapabilities: true, MetaLogLevel: true}

// IsClientKey reports whether a _meta key is one of the 2026-07-28
// client keys Legacy removes.
func IsClientKey(key string) bool { return clientKeys[key] }

// Complete completes params for a 2026-07-28 server: the revision, and
// the client's capabilities, identity and log level ("" for none) where
// the request does not carry its own. Every other member, and every
// other _meta key, stays as it was.
func Complete(params, info, caps json.RawMessage, level string) json.RawMessage {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(`{}`)
	}
	ms := rawjson.Members(params)
	if ms == nil {
		return params // not an object: the server will say so
	}
	meta := ms["_meta"]
	if rawjson.Members(meta) == nil {
		meta = json.RawMessage(`{}`)
	}
	have := rawjson.Members(meta)
	set := func(key string, v any) {
		if next, err := rawjson.Set(meta, key, v); err == nil {
			meta = next
		}
	}
	set(MetaProtocolVersion, Modern)
	if _, ok := have[MetaClientCapabilities]; !ok {
		set(MetaClientCapabilities, caps)
	}
	if _, ok := have[MetaClientInfo]; !ok {
		set(MetaClientInfo, info)
	}
	if _, ok := have[MetaLogLevel]; !ok && level != "" {
		set(MetaLogLevel, level)
	}
	out, err := rawjson.Set(params, "_meta", meta)
	if err != nil {
		return params
	}
	return out
}

// Legacy removes the 2026-07-28 client keys from a request's _meta for
// a server initialized in 2025-11-25.
func Legacy(params json.RawMessage) json.RawMessage {
	meta, ok := rawjson.Lookup(params, "_meta")
	if !ok {
		return params
	}
	ms, err := rawjson.Split(meta)
	if err != nil {
		return params
	}
	kept := ms[:0:0]
	for _, m := range ms {
		if !clientKeys[m.Key] {
			kept = append(kept, m)
		}
	}
	if len(kept) == len(ms) {
		return params
	}
	var out json.RawMessage
	if len(kept) == 0 {
		out, err = rawjson.Delete(params, "_meta")
	} else {
		out, err = rawjson.Set(params, "_meta", rawjson.Encode(kept))
	}
	if err != nil {
		return params
	}
	return out
}

// Untagged is params without the listen stream id in their _meta (and
// without _meta if that was all it held), and whether there was one. The
// ids on the client's side are aqlguard's to give: a server's
// notification cannot name the stream it goes to.
func Untagged(params json.RawMessage) (json.RawMessage, bool) {
	meta, ok := rawjson.Lookup(params, "_meta")
	if !ok {
		return params, false
	}
	if _, tagged := rawjson.Lookup(meta, MetaSubscriptionID); !tagged {
		return params, false
	}
	meta, err := rawjson.Delete(meta, MetaSubscriptionID)
	if err != nil {
		return params, false
	}
	var out json.RawMessage
	if string(meta) == "{}" {
		out, err = rawjson.Delete(params, "_meta")
	} else {
		out, err = rawjson.Set(params, "_meta", meta)
	}
	if err != nil {
		return params, false
	}
	return out, true
}
