package relay

import (
	"bytes"
	"encoding/json"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
)

// members is rawjson.Split as a map, for reading; nil when raw is not an
// object. With duplicate keys the last one counts, as in encoding/json
// (and rawjson.Get).
func members(raw json.RawMessage) map[string]json.RawMessage {
	ms, err := rawjson.Split(raw)
	if err != nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		out[m.Key] = m.Value
	}
	return out
}

// setMember returns the object raw with key set to value (encoded unless
// it is already a json.RawMessage), in place if the key exists, else
// appended; every other member stays as it was. raw may be empty (a new
// object).
func setMember(raw json.RawMessage, key string, value any) (json.RawMessage, error) {
	ms, err := rawjson.Split(raw)
	if err != nil {
		return nil, err
	}
	v, ok := value.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(value)
		if err != nil {
			return nil, err
		}
		v = b
	}
	found := false
	for i := range ms {
		if ms[i].Key == key {
			ms[i].Value, found = v, true
		}
	}
	if !found {
		ms = append(ms, rawjson.Member{Key: key, Value: v})
	}
	return encodeMembers(ms), nil
}

// deleteMember returns the object raw without key.
func deleteMember(raw json.RawMessage, key string) (json.RawMessage, error) {
	ms, err := rawjson.Split(raw)
	if err != nil {
		return nil, err
	}
	out := ms[:0]
	for _, m := range ms {
		if m.Key != key {
			out = append(out, m)
		}
	}
	return encodeMembers(out), nil
}

func encodeMembers(ms []rawjson.Member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.Value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

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
