//go:build !windows && !plan9

package app

import "log/syslog"

// SystemLogAnchor sends audit anchors to the system log (journald or
// syslog, through /dev/log), where an agent running as this user cannot
// take them back; nil, with off saying why, without one.
func SystemLogAnchor() (anchor func(string) error, off string) {
	w, err := syslog.New(syslog.LOG_NOTICE|syslog.LOG_AUTHPRIV, AnchorIdent)
	if err != nil {
		return nil, err.Error()
	}
	return func(line string) error { return w.Notice(line) }, ""
}
