// Package store will keep aqlguard's durable state in one bbolt file under
// the state directory: hard blocks, challenges (salted code hashes only),
// verification failure counters, executions, confirmation tokens and the
// hash-chained audit log. bbolt's types stay inside the package and every
// exported method is one transaction.
//
// Empty until the store issue.
package store
