package policy

const isDarwin = true
