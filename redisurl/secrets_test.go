package redisurl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestErrorsNeverShowPasswords parses broken URLs whose passwords contain
// every character that breaks a URL when not percent-encoded, in the
// userinfo, in sentinelPassword, and in an (unsupported) password
// parameter. Whatever the error, no part of the password after its special
// character (the distinctive "7f3kQ") may appear in it.
func TestErrorsNeverShowPasswords(t *testing.T) {
	const tail = "7f3kQ"
	passwords := []string{"Pw-" + tail}
	for _, sep := range []string{"/", "?", "#", "@", "&", "%", "%zz", ":", ",", " ", "[", "]", "=", "+", "&readFrom=", "&db="} {
		passwords = append(passwords, "Pw"+sep+tail)
	}
	templates := []string{
		"redis://app:{pw}@h:6379/0",
		"redis://app:{pw}@h:abc",
		"redis://:{pw}@h/x",
		"redis://app:{pw}@",
		"redis://app:{pw}@h?dialTimeout=soon",
		"rediss://app:{pw}@h?caFile=",
		"redis+sentinel://app:{pw}@h1:26379,h2:bad/m",
		"redis+sentinel://app:{pw}@h1/m?sentinelPassword={pw}&readFrom=bad",
		"redis+sentinel://h1/m?sentinelPassword={pw}",
		"redis+sentinel://h1/m?sentinelPassword={pw}&foo=bar",
		"redis+sentinel://h1/m?readFrom=replica&sentinelPassword={pw}&dialTimeout=x",
		"redis+sentinel://h1:bad/m?sentinelPassword={pw}",
		"redis+sentinel://h1/m/x?sentinelPassword={pw}",
		"redis+sentinel://h1/m?sentinelPassword={pw}&sentinelPassword={pw}",
		"unix://:{pw}@/run/redis.sock?db=x",
		"redis://h?password={pw}",
		"redis://h?db=1&password={pw}&x=y",
		"redis+sentinal://app:{pw}@h/m",
		"redis://app:{pw}@h1,h2",
		"redis+sentinel://h/İİİİİİİİ?sentinelPassword={pw}&readFrom=x",
		"redis+cluster://app:{pw}@h1,h2:7001",
		"redis+cluster://app:{pw}@h1,h2:bad",
		"redis+cluster://app:{pw}@h1,h1",
		"redis+cluster://:{pw}@h1/3",
		"rediss+cluster://app:{pw}@h1?readFrom=x",
		"redis+cluster://app:{pw}@h1?addr=h2",
		"redis://app:{pw}@h1:7000?addr=h2:7001&addr=h3",
		"redis://app:{pw}@h1:7000?addr=h2:bad",
		"redis://app:{pw}@h1:7000?addr=h1:7000",
		"redis://h1?addr=h2&password={pw}&addr=h2",
		"redis://app:{pw}@h1,h2?addr=h3",
	}
	for _, tmpl := range templates {
		for _, pw := range passwords {
			u := strings.ReplaceAll(tmpl, "{pw}", pw)
			c, err := Parse(u)
			if err != nil {
				if strings.Contains(err.Error(), tail) {
					t.Errorf("Parse(%q): error shows the password: %v", u, err)
				}
				continue
			}
			for _, s := range []string{c.Redacted(), c.String(), fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, *c, *c, c)} {
				if strings.Contains(s, tail) {
					t.Errorf("Parse(%q): formatted as %q, with the password", u, s)
				}
			}
		}
	}
}

// TestConfigNeverPrintsPasswords formats a Config every way a program
// might log it.
func TestConfigNeverPrintsPasswords(t *testing.T) {
	c, err := Parse("rediss+sentinel://app:data-Secret-1@h1,h2/m/1?sentinelUser=w&sentinelPassword=sentinel-Secret-2&caFile=/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	checkNeverPrinted(t, c)
	if !strings.Contains(c.Redacted(), "app:xxxxx@") || !strings.Contains(c.Redacted(), "sentinelPassword=xxxxx") {
		t.Errorf("Redacted() = %q: passwords not marked as set", c.Redacted())
	}
	if !strings.Contains(c.URL(), "data-Secret-1") || !strings.Contains(c.URL(), "sentinel-Secret-2") {
		t.Errorf("URL() = %q lost a password", c.URL())
	}
}

// TestClusterConfigNeverPrintsPasswords is TestConfigNeverPrintsPasswords
// for both forms of a cluster URL.
func TestClusterConfigNeverPrintsPasswords(t *testing.T) {
	for _, u := range []string{
		"rediss+cluster://app:data-Secret-1@h1,h2:7001?caFile=/ca.pem&readFrom=replica",
		"rediss://app:data-Secret-1@h1?addr=h2:7001&caFile=/ca.pem",
	} {
		c, err := Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		checkNeverPrinted(t, c)
		if want := "rediss+cluster://app:xxxxx@h1:6379,h2:7001?"; !strings.HasPrefix(c.Redacted(), want) {
			t.Errorf("Redacted() = %q, want it to start %q", c.Redacted(), want)
		}
		if !strings.Contains(c.URL(), "data-Secret-1") {
			t.Errorf("URL() = %q lost the password", c.URL())
		}
	}
}

// checkNeverPrinted formats c every way a program might log it and fails
// if a password (containing "Secret") shows.
func checkNeverPrinted(t *testing.T, c *Config) {
	t.Helper()
	var logText, logJSON bytes.Buffer
	slog.New(slog.NewTextHandler(&logText, nil)).Info("connect", "cfg", c, "value", *c)
	slog.New(slog.NewJSONHandler(&logJSON, nil)).Info("connect", "cfg", c, "value", *c)
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		"Redacted": c.Redacted(), "String": c.String(), "GoString": c.GoString(),
		"%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", c), "%#v": fmt.Sprintf("%#v", c), "%s": fmt.Sprintf("%s", c), //nolint:staticcheck // the %s verb is what is tested
		"value %v": fmt.Sprintf("%v", *c), "value %+v": fmt.Sprintf("%+v", *c), "value %#v": fmt.Sprintf("%#v", *c),
		"slog text": logText.String(), "slog JSON": logJSON.String(), "json.Marshal": string(js),
	}
	for how, out := range outputs {
		if strings.Contains(out, "Secret") {
			t.Errorf("%s shows a password: %s", how, out)
		}
	}
}
