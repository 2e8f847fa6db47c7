//go:build !windows && !plan9

package main

import "log/syslog"

// systemLogAnchor sends audit anchors to the system log (journald or
// syslog, through /dev/log), where an agent running as this user cannot
// take them back; nil, with anchorsOff saying why, without one.
func systemLogAnchor() func(string) error {
	w, err := syslog.New(syslog.LOG_NOTICE|syslog.LOG_AUTHPRIV, anchorIdent)
	if err != nil {
		anchorsOff = err.Error()
		return nil
	}
	return func(line string) error { return w.Notice(line) }
}
