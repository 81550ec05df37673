package redisurl

import (
	"errors"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ParseFailoverURL reads a URL in go-redis's failover form, the one
// redis.ParseFailoverURL reads, and returns what that function returns:
//
//	redis://[sentinelUser:sentinelPassword@]host[:port][/db]?master_name=mymaster[&addr=host2:port…][&params]
//	rediss://…                                                         (TLS)
//
// with one difference: its errors are *Error values that never quote a
// password. go-redis's own errors quote the whole URL when it does not
// parse, and the parts of it they complain of, which can be pieces of a
// password with an unencoded '/', '?', '#' or '&'; when the URL holds
// credentials (userinfo, or a password parameter), the error here says
// what to check instead of quoting go-redis.
//
// The two forms differ in where things go. In go-redis's, the userinfo is
// the sentinels' credentials and the data nodes' are the username and
// password parameters; the first sentinel is the host and the others are
// addr parameters; a sentinel without a port uses 6379; parameters are
// go-redis's snake_case option names (dial_timeout=3 is seconds). In
// rediskit's (Parse), the userinfo is the data nodes' credentials and the
// sentinels' are sentinelUser and sentinelPassword; every sentinel is in
// the host list, 26379 by default; the master name is the path:
//
//	redis://s3cret@10.0.0.1:26379/2?master_name=mymaster&addr=10.0.0.2:26379&password=app-pw
//	redis+sentinel://:app-pw@10.0.0.1,10.0.0.2/mymaster/2?sentinelPassword=s3cret
//
// sentinel.FromFailoverURL converts the result into sentinel.Config.
func ParseFailoverURL(rawURL string) (*redis.FailoverOptions, error) {
	raw := strings.TrimSpace(rawURL)
	sep := strings.Index(raw, "://")
	if sep < 0 || !isSchemeSyntax(raw[:sep]) {
		return nil, &Error{Field: "scheme", Reason: ReasonMissing, Hint: "go-redis's failover URL is redis:// or rediss://"}
	}
	switch scheme := strings.ToLower(raw[:sep]); scheme {
	case "redis", "rediss":
	case "redis+sentinel", "rediss+sentinel":
		return nil, &Error{Field: "scheme", Value: raw[:sep], Reason: "is rediskit's sentinel URL, not go-redis's failover URL",
			Hint: "read it with Parse, or give it to sentinel.NewClientFromURL"}
	default:
		return nil, &Error{Field: "scheme", Value: raw[:sep], Reason: ReasonUnknown, Hint: "go-redis's failover URL is redis:// or rediss://"}
	}
	fo, err := redis.ParseFailoverURL(raw)
	if err == nil {
		return fo, nil
	}
	if hasCredentials(raw, sep+3) {
		return nil, &Error{Field: "URL", Reason: "go-redis's ParseFailoverURL refused it (its message is not shown: it can quote a password)",
			Hint: "check the hosts and ports, the parameters and their values, and percent-encode '/', '?', '#', '&', '@' and '%' in the user names and passwords"}
	}
	// No credential in the URL: go-redis's message can be shown, but not
	// url.Parse's quoting of the whole URL.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return nil, &Error{Field: "URL", Reason: "go-redis's ParseFailoverURL refused it", Err: err}
}

// hasCredentials reports whether the URL, past its scheme (at
// afterScheme), may hold a secret: userinfo (an '@' anywhere after the
// scheme, as Parse marks it) or a password parameter.
func hasCredentials(raw string, afterScheme int) bool {
	return strings.IndexByte(raw[afterScheme:], '@') >= 0 || indexFoldASCII(raw, "password=") >= 0
}
