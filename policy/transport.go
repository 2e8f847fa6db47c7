package policy

import (
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/aqlguard/aqlguard/config"
)

// Plain http is read and changed by anyone on the network path, so the
// configuration refuses it where it would leave the machine (issue 29,
// item 9):
//
//   - a remote server ([[servers]] url) over http:// to a host that is not
//     this machine is an error unless the entry says insecure = true;
//   - credentials never go over such a connection, insecure or not: a
//     header that carries one (by its name or its value), auth = "oauth"
//     (its tokens would), a user name or password in the URL;
//   - the other URLs the configuration sends credentials to ([audit.forward]
//     url with its headers, [serve] traces_endpoint) follow the second
//     rule: over http:// to another host, no credentials.
//
// This machine is a loopback address (127.0.0.0/8, ::1, an IPv4-mapped
// ::ffff:127.x.y.z) or the name "localhost" (any case), which aqlguard
// takes to be the machine itself, as the hosts file says on every system:
// policy reads the configuration and does no other I/O, so no name is
// looked up. Every other name, *.localhost and "localhost." included, is
// another host, whatever it resolves to; so is 0.0.0.0.

// loopbackHost reports whether h (a URL's Hostname) names this machine.
func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// plainRemote reports whether u is http:// to a host that is not this
// machine.
func plainRemote(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, "http") && !loopbackHost(u.Hostname())
}

// credentialHeaderName matches header names that say they carry a
// credential: Authorization, Proxy-Authorization, Cookie, X-API-Key,
// X-Auth-Token, Private-Token, X-Secret, and the like.
var credentialHeaderName = regexp.MustCompile(`(?i)key|token|secret|auth|cookie|passw|credential|session`)

// credentialHeaderValue matches header values that are an HTTP
// authorization, under whatever name they are sent.
var credentialHeaderValue = regexp.MustCompile(`(?i)^\s*(bearer|basic|digest|token|negotiate|ntlm|aws4-hmac-sha256|splunk)\s`)

// credentialHeader reports whether an HTTP header carries a credential,
// by its name or by its value (the value as configured: ${NAME} is not
// expanded).
func credentialHeader(name, value string) bool {
	return credentialHeaderName.MatchString(name) || credentialHeaderValue.MatchString(value)
}

// serverTransport checks a remote server's url against plain http: key is
// the entry's key (servers[1]).
func (v *validator) serverTransport(k string, s *config.Server) {
	u, err := url.Parse(s.URL)
	if s.URL == "" || err != nil || u.Host == "" {
		if s.Insecure {
			v.errf(k+".insecure", "only applies to a server whose url is http://: it accepts plain http to another host")
		}
		return
	}
	if !strings.EqualFold(u.Scheme, "http") {
		if s.Insecure {
			v.errf(k+".insecure", "only applies to an http:// url; %q is not one: leave insecure out", s.URL)
		}
		return
	}
	if !plainRemote(u) {
		return // this machine: nothing is on the way
	}
	host := u.Hostname()
	if !s.Insecure {
		v.errf(k+".url", "%q is plain http to %s, which is not this machine: anyone on the network path can read and change "+
			"every call and answer; use https://, or set insecure = true in this [[servers]] entry to accept that "+
			"(credentials are never sent over plain http)", redactURL(u), host)
	}
	v.noCredentials(k, u, s.Headers, "")
	if s.Auth == "oauth" {
		v.errf(k+".auth", "\"oauth\" would send its tokens over plain http to %s, where anyone on the network path reads them; "+
			"use an https:// url (insecure = true never allows credentials)", host)
	}
}

// noCredentials reports the credentials a plain-http URL to another host
// would carry: its user name or password, and headers that carry one.
// k is the table of the URL (urlKey its key there) and of headers.
func (v *validator) noCredentials(k string, u *url.URL, headers map[string]string, what string) {
	host := u.Hostname()
	tail := "use an https:// url (insecure = true never allows credentials)"
	if what != "" {
		tail = "use an https:// url for " + what
	}
	if u.User != nil {
		v.errf(k+".url", "%q has a user name or password in it, which plain http to %s shows to anyone on the network path; %s",
			redactURL(u), host, tail)
	}
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		if credentialHeader(name, headers[name]) {
			v.errf(joinKey(k+".headers", name), "%q carries a credential, which plain http to %s shows to anyone on the network path; %s",
				name, host, tail)
		}
	}
}

// redactURL is u for a message: its user name and password, if any,
// left out (a user name can be a token).
func redactURL(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User("…")
	}
	return c.String()
}
