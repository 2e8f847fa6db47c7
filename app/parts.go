package app

// The parts that register themselves from packages of their own; the
// state directory (store), the dialog and command channels (verify) and
// the syslog, OTLP, Splunk and file destinations (audit/forward)
// register from the packages the assembly imports anyway.
import (
	_ "github.com/aqlguard/aqlguard/store/pgstate" // [state] backend = "postgres"
)
