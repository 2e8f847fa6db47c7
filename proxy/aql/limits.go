package aql

import "github.com/aqlguard/aqlguard/config"

// Limits are the payload limits of spec 4.7.5, as configured ([limits])
// and as introspection reports them. The policy package checks
// configured values against the spec's ranges and applies the defaults;
// here they are just numbers.
type Limits = config.Limits

// DefaultLimits are the spec's defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxRequestSize:   1 << 20,
		MaxResponseSize:  10 << 20,
		MaxStringLength:  1 << 20,
		MaxArrayElements: 10000,
		MaxNestingDepth:  32,
	}
}

// checkValue enforces the string-length and array-element limits on a
// decoded value. Depth was already bounded by the byte scanner, so the
// recursion here is shallow by construction.
func checkValue(l Limits, v any, path string) *Error {
	switch x := v.(type) {
	case string:
		if int64(len(x)) > l.MaxStringLength {
			return TooLarge(LimitStringLength, l.MaxStringLength, int64(len(x)), path)
		}
	case []any:
		if len(x) > l.MaxArrayElements {
			return TooLarge(LimitArrayElements, int64(l.MaxArrayElements), int64(len(x)), path)
		}
		for i, e := range x {
			if err := checkValue(l, e, indexPath(path, i)); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, e := range x {
			if int64(len(k)) > l.MaxStringLength {
				return TooLarge(LimitStringLength, l.MaxStringLength, int64(len(k)), path)
			}
			if err := checkValue(l, e, keyPath(path, k)); err != nil {
				return err
			}
		}
	}
	return nil
}
