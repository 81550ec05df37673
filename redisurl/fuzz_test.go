package redisurl

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary text to Parse. raw is a URL in which "{pw}",
// if it appears once in a password position, is replaced by the
// percent-encoded secret. For every input:
//
//   - Parse does not panic, and its errors are *Error whose Value is text
//     of the URL;
//   - a URL that parses survives formatting: Parse(c.URL()) equals c, and
//     formatting is stable;
//   - String is Redacted, and Redacted parses to c with marked passwords;
//   - Redacted does not depend on the passwords' values;
//   - with the secret in a password position, the outcome (error text or
//     Redacted) is the same for a different secret: neither ever shows it.
func FuzzParse(f *testing.F) {
	for _, seed := range []struct{ raw, secret string }{
		{"redis://localhost", ""},
		{"redis://app:{pw}@10.0.0.1:6380/3?dialTimeout=2s&clientName=app", "s3cret"},
		{"rediss://:{pw}@[::1]:6379/0?caFile=/ca.pem&certFile=/c.pem&keyFile=/k.pem&serverName=x&insecureSkipVerify=true", "p@ss/w:rd%#?&"},
		{"unix://:{pw}@/run/redis.sock?db=2&readTimeout=1s&writeTimeout=1s", "x"},
		{"redis+sentinel://app:{pw}@10.0.0.1:26379,10.0.0.2,[fe80::1%25eth0]/mymaster/2?sentinelPassword=t0p&preferReplica=true", "s3cret"},
		{"rediss+sentinel://h1,h2:26380/m?sentinelUser=w&sentinelPassword={pw}&readFrom=nearest", "sentinel secret"},
		{"redis+sentinel://10.0.0.1:abc/m?sentinelPassword={pw}", "s3cret"},
		{"redis+sentinal://app:{pw}@h/m", "s3cret"},
		{"redis://h?password={pw}&x=1", "s3cret"},
		{"redis://:{pw}@h/x", "s3cret"},
		{"redis+cluster://app:{pw}@10.0.0.1:7000,10.0.0.2,[fe80::1%25eth0]:7002?readFrom=replica&dialTimeout=1s&clientName=api", "s3cret"},
		{"rediss+cluster://:{pw}@h1,h2/0?caFile=/ca.pem&certFile=/c.pem&keyFile=/k.pem&serverName=x&insecureSkipVerify=true&readFrom=nearest", "p@ss/w:rd%#?&"},
		{"redis://user:{pw}@h1:7000?addr=h2:7001&addr=%5B::1%5D:7002&readFrom=replicaPreferred", "s3cret"},
		{"rediss://h1?addr=h2&addr=h1:6379&caFile=/ca.pem", ""},
		{"redis+cluster://:{pw}@h1,h2/3", "s3cret"},
	} {
		f.Add(seed.raw, seed.secret)
	}
	f.Fuzz(func(t *testing.T, raw, secret string) {
		checkParse(t, raw)
		if strings.Count(raw, "{pw}") != 1 || secret == "" || !passwordSlot(raw) {
			return
		}
		u1 := strings.Replace(raw, "{pw}", escape(secret, false), 1)
		u2 := strings.Replace(raw, "{pw}", escape("another-"+secret, false), 1)
		checkParse(t, u1)
		c1, err1 := Parse(u1)
		c2, err2 := Parse(u2)
		switch {
		case (err1 == nil) != (err2 == nil):
			t.Fatalf("the password's value changed the outcome: %q: %v; %q: %v", u1, err1, u2, err2)
		case err1 != nil && err1.Error() != err2.Error():
			t.Fatalf("the error depends on the password: %q vs %q", err1, err2)
		case err1 == nil && c1.Redacted() != c2.Redacted():
			t.Fatalf("Redacted depends on the password: %q vs %q", c1.Redacted(), c2.Redacted())
		}
	})
}

var (
	userinfoSlot = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@]*:\{pw\}@`)
	querySlot    = regexp.MustCompile(`[?&](?i:sentinelPassword|password)=\{pw\}`)
)

// passwordSlot reports whether "{pw}" stands where Parse reads a password:
// right after "user:" in the userinfo, or as the value of a password
// parameter in the query.
func passwordSlot(raw string) bool {
	if userinfoSlot.MatchString(raw) {
		return true
	}
	loc := querySlot.FindStringIndex(raw)
	if loc == nil {
		return false
	}
	after := strings.Index(raw, "://")
	q := strings.IndexByte(raw[max(after, 0):], '?')
	return after >= 0 && q >= 0 && after+q <= loc[0]
}

func checkParse(t *testing.T, raw string) {
	c, err := Parse(raw)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("Parse(%q): %v is %T, not *Error", raw, err, err)
		}
		if e.Value != "" && !strings.Contains(raw, e.Value) {
			t.Fatalf("Parse(%q): Value %q is not text of the URL", raw, e.Value)
		}
		return
	}
	u := c.URL()
	back, err := Parse(u)
	if err != nil {
		t.Fatalf("Parse(%q) gave %#v, whose URL %q does not parse: %v", raw, fields(*c), u, err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip: Parse(%q) = %#v\nParse(URL() = %q) = %#v", raw, fields(*c), u, fields(*back))
	}
	if back.URL() != u {
		t.Fatalf("URL() not stable: %q then %q", u, back.URL())
	}
	if c.String() != c.Redacted() {
		t.Fatalf("String() %q != Redacted() %q", c.String(), c.Redacted())
	}
	red, err := Parse(c.Redacted())
	if err != nil {
		t.Fatalf("Redacted() %q does not parse: %v", c.Redacted(), err)
	}
	marked := *c
	if marked.Password != "" {
		marked.Password = redactedPassword
	}
	if marked.SentinelPassword != "" {
		marked.SentinelPassword = redactedPassword
	}
	if !reflect.DeepEqual(*red, marked) {
		t.Fatalf("Parse(Redacted()) = %#v, want %#v", fields(*red), fields(marked))
	}
	other := *c
	if other.Password != "" {
		other.Password += "-other"
	}
	if other.SentinelPassword != "" {
		other.SentinelPassword += "-other"
	}
	if other.Redacted() != c.Redacted() {
		t.Fatalf("Redacted depends on the passwords: %q vs %q", c.Redacted(), other.Redacted())
	}
}
