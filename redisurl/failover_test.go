package redisurl

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ParseFailoverURL returns what go-redis's ParseFailoverURL returns for
// the URLs it accepts, and refuses the other schemes with an *Error.
func TestParseFailoverURL(t *testing.T) {
	good := []string{
		"redis://10.0.0.1:26379?master_name=mymaster",
		"redis://sent:s3cret@10.0.0.1:26379/2?master_name=mymaster&addr=10.0.0.2:26379&addr=10.0.0.3:26380&username=app&password=app-pw",
		"redis://h?master_name=m&dial_timeout=3&read_timeout=6s&pool_size=20&max_retries=-1&pool_fifo=true&conn_max_lifetime=1m",
		"rediss://h:26379?master_name=m&skip_verify=true",
	}
	for _, u := range good {
		got, err := ParseFailoverURL(u)
		if err != nil {
			t.Errorf("ParseFailoverURL(%q): %v", u, err)
			continue
		}
		want, err := redis.ParseFailoverURL(u)
		if err != nil {
			t.Fatalf("go-redis refuses %q: %v", u, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseFailoverURL(%q) = %+v, go-redis says %+v", u, got, want)
		}
	}
	got, err := ParseFailoverURL("redis://sent:s3cret@h:26379/2?master_name=m&addr=h2:26380&dial_timeout=3")
	if err != nil {
		t.Fatal(err)
	}
	if got.MasterName != "m" || got.SentinelPassword != "s3cret" || got.DB != 2 || got.DialTimeout != 3*time.Second ||
		!reflect.DeepEqual(got.SentinelAddrs, []string{"h:26379", "h2:26380"}) {
		t.Errorf("fields: %+v", got)
	}

	bad := []struct{ url, field, want string }{
		{"10.0.0.1:26379?master_name=m", "scheme", "missing scheme"},
		{"redis+sentinel://h1,h2/mymaster", "scheme", "rediskit's sentinel URL"},
		{"REDISS+SENTINEL://h1/mymaster", "scheme", "rediskit's sentinel URL"},
		{"unix:///run/redis.sock?master_name=m", "scheme", `unknown scheme "unix"`},
		// No credentials: go-redis's reason is shown.
		{"redis://h?master_name=m&pool_size=many", "URL", "pool_size"},
		{"redis://h?master_name=m&route_by_latancy=true", "URL", "unexpected option: route_by_latancy"},
		{"redis://h/x?master_name=m", "URL", "invalid database number"},
		{"redis://h:1 2?master_name=m", "URL", "invalid port"},
	}
	for _, tt := range bad {
		_, err := ParseFailoverURL(tt.url)
		var e *Error
		if !errors.As(err, &e) || e.Field != tt.field || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseFailoverURL(%q) = %v; want an *Error about %s saying %q", tt.url, err, tt.field, tt.want)
		}
	}
}

// go-redis's errors quote the URL, or the pieces of a password that an
// unencoded character moved into another part; ParseFailoverURL's never
// show any part of a password. The passwords carry every character that
// breaks a URL when not percent-encoded, in the userinfo (the sentinels')
// and in the password parameter (the data nodes').
func TestParseFailoverURLErrorsNeverShowPasswords(t *testing.T) {
	const tail = "7f3kQ"
	passwords := []string{"Pw-" + tail}
	for _, sep := range []string{"/", "?", "#", "@", "&", "%", "%zz", ":", ",", " ", "[", "]", "=", "+", "&db=", "&addr="} {
		passwords = append(passwords, "Pw"+sep+tail)
	}
	templates := []string{
		"redis://sent:{pw}@h:26379/0?master_name=m",
		"redis://sent:{pw}@h:abc?master_name=m",
		"redis://:{pw}@h/x?master_name=m",
		"redis://sent:{pw}@h?master_name=m&dial_timeout=soon",
		"rediss://sent:{pw}@h?master_name=m&skip_verify=maybe",
		"redis://h?master_name=m&password={pw}",
		"redis://h?master_name=m&password={pw}&pool_size=x",
		"redis://h?password={pw}&master_name=m&addr=bad",
		"redis://sent:{pw}@h?master_name=m&password={pw}&db=x",
	}
	leaky := 0 // cases where go-redis's own error shows the tail
	for _, tmpl := range templates {
		for _, pw := range passwords {
			u := strings.ReplaceAll(tmpl, "{pw}", pw)
			if _, err := redis.ParseFailoverURL(u); err != nil && strings.Contains(err.Error(), tail) {
				leaky++
			}
			_, err := ParseFailoverURL(u)
			if err != nil && strings.Contains(err.Error(), tail) {
				t.Errorf("ParseFailoverURL(%q): the error shows the password: %v", u, err)
			}
		}
	}
	if leaky == 0 {
		t.Fatal("go-redis's errors never showed the password: the test cannot tell a leak")
	}
	t.Logf("%d URLs whose go-redis error shows part of the password", leaky)
}
