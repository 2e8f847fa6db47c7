//go:build !unix

package clientconfig

import "os"

// Lock is a no-op where flock(2) does not exist beyond creating dir: runs
// of init and unwrap are not expected to overlap there.
func Lock(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return func() {}, nil
}
