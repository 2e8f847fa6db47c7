package relay

import (
	"encoding/json"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
)

// The relay edits objects member by member (package rawjson): these are
// its short names for it.

func members(raw json.RawMessage) map[string]json.RawMessage { return rawjson.Members(raw) }

func setMember(raw json.RawMessage, key string, value any) (json.RawMessage, error) {
	return rawjson.Set(raw, key, value)
}

func deleteMember(raw json.RawMessage, key string) (json.RawMessage, error) {
	return rawjson.Delete(raw, key)
}

func encodeMembers(ms []rawjson.Member) json.RawMessage { return rawjson.Encode(ms) }

// SetMember and DeleteMember are setMember and deleteMember for the
// modes' tool handlers (package proxy).
func SetMember(raw json.RawMessage, key string, value any) (json.RawMessage, error) {
	return setMember(raw, key, value)
}

func DeleteMember(raw json.RawMessage, key string) (json.RawMessage, error) {
	return deleteMember(raw, key)
}

// Members is members for package proxy.
func Members(raw json.RawMessage) map[string]json.RawMessage { return members(raw) }
