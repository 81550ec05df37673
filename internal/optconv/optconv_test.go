package optconv

import (
	"strings"
	"testing"
	"time"
)

type opts struct {
	Known   int
	Refuse  time.Duration
	Unknown string
	Secret  string
	hidden  int
}

func TestConvert(t *testing.T) {
	rules := map[string]Rule[opts, int]{
		"Known":  func(o *opts, s *int) string { *s = o.Known; return "" },
		"Refuse": func(o *opts, _ *int) string { return map[bool]string{true: "no"}[o.Refuse != 0] },
		"Secret": func(o *opts, _ *int) string { return map[bool]string{true: "never"}[o.Secret != ""] },
	}
	var got int
	refused := Convert(&opts{Known: 7, Refuse: time.Second, Unknown: "x", Secret: "pw", hidden: 1}, &got, rules)
	if got != 7 || len(refused) != 3 {
		t.Fatalf("state %d, refused %+v", got, refused)
	}
	want := []Refused{{"Refuse", "1s", "no"}, {"Unknown", "set", UnknownField}, {"Secret", "set", "never"}}
	for i, r := range refused {
		if r != want[i] {
			t.Errorf("refused[%d] = %+v, want %+v", i, r, want[i])
		}
	}
	msg := Message("pkg", "redis.Opts", refused)
	if !strings.HasPrefix(msg, "pkg: 3 redis.Opts fields have no counterpart: Refuse (1s): no; ") || strings.Contains(msg, "pw") {
		t.Errorf("message %q", msg)
	}
	if Convert(&opts{}, &got, rules) != nil {
		t.Error("zero options refused")
	}
}
