package hashring

import (
	"errors"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestHashVectors(t *testing.T) {
	// redis-hashring's README and the seed: "hello" is at 4211111929 with
	// xxHash; CRC-32 (IEEE) of "hello" is 907060870.
	for _, tc := range []struct {
		h    Hash
		key  string
		want uint32
	}{
		{XXHash, "hello", 4211111929},
		{CRC32, "hello", 907060870},
		{XXHash, "", 0x02cc5d05}, // XXH32 of nothing, seed 0
		{CRC32, "", 0},
		{CRC32, "123456789", 0xcbf43926}, // the CRC-32 check value
	} {
		if got := tc.h.Point(tc.key); got != tc.want {
			t.Errorf("%v.Point(%q) = %d, want %d", tc.h, tc.key, got, tc.want)
		}
	}
	if Point("hello") != 4211111929 {
		t.Errorf("Point defaults to XXHash")
	}
	if XXHash.String() != "xxhash" || CRC32.String() != "crc32" {
		t.Errorf("names: %v %v", XXHash, CRC32)
	}
}

func TestParseMember(t *testing.T) {
	good := []struct {
		in   string
		want Member
	}{
		{"706234936:mbp.local:80721:249d729d", Member{706234936, "mbp.local", "80721", "249d729d"}},
		{"0:h:1:00000000", Member{0, "h", "1", "00000000"}},
		{"4294967295:h:1:ffffffff", Member{4294967295, "h", "1", "ffffffff"}},
		{"007:h:1:x", Member{7, "h", "1", "x"}}, // Python's int() reads leading zeros
		{"5::1:x", Member{5, "", "1", "x"}},     // Python accepts empty fields
		{"5:höst:1:x", Member{5, "höst", "1", "x"}},
	}
	for _, tc := range good {
		m, err := ParseMember(tc.in)
		if err != nil || m != tc.want {
			t.Errorf("ParseMember(%q) = %+v, %v; want %+v", tc.in, m, err, tc.want)
		}
	}
	bad := []string{
		"", "garbage", ":h:1:x", "x:h:1:x", "12:host:1", "5:a:b:c:d", "-5:h:1:x", "+5:h:1:x",
		" 5:h:1:x", "1_0:h:1:x", "4294967296:h:1:x", "99999999999:h:1:x", "\xff:h:1:x", "5:h\xff:1:x",
		"٥:h:1:x", // an Arabic-Indic digit: Python's int() reads it, no writer writes it
	}
	for _, in := range bad {
		if m, err := ParseMember(in); !errors.Is(err, ErrMalformedMember) {
			t.Errorf("ParseMember(%q) = %+v, %v; want ErrMalformedMember", in, m, err)
		}
	}
}

func TestMemberRoundTrip(t *testing.T) {
	ms := newMembers(64, "host-1.example", "4242")
	hex8 := regexp.MustCompile(`^[0-9a-f]{8}$`)
	starts, ids := map[uint32]bool{}, map[string]bool{}
	for _, m := range ms {
		s := m.String()
		got, err := ParseMember(s)
		if err != nil || got != m {
			t.Fatalf("round trip %q: %+v %v", s, got, err)
		}
		if !hex8.MatchString(m.ID) {
			t.Errorf("id %q is not 8 lowercase hex characters", m.ID)
		}
		if starts[m.Start] || ids[m.ID] {
			t.Errorf("duplicate start or id in %q", s)
		}
		starts[m.Start], ids[m.ID] = true, true
		if m.NodeID() != "host-1.example:4242" {
			t.Errorf("node id %q", m.NodeID())
		}
	}
}

func TestCheckHostname(t *testing.T) {
	for _, h := range []string{"a:b", "", "fe80::1", "x\xff"} {
		if err := checkHostname(h); !errors.Is(err, ErrInvalidHostname) {
			t.Errorf("checkHostname(%q) = %v", h, err)
		}
	}
	if err := checkHostname("mbp.local"); err != nil {
		t.Error(err)
	}
}

// Every member ParseMember accepts, Python reads the same way; every
// member Python reads with a canonical start (ASCII digits, inside the
// ring), ParseMember accepts.
func FuzzParseMember(f *testing.F) {
	for _, s := range []string{
		"706234936:mbp.local:80721:249d729d", "0:h:1:00000000", "4294967295:h:1:ffffffff",
		"4294967296:h:1:x", "5:a:b:c:d", "12:host:1", "garbage", "", ":::", "007:h:1:x",
		"-5:h:1:x", " 5 :h:1:x", "1_0:h:1:x", "٥:h:1:x", "\xff:h:1:x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMember(s)
		py, pyErr := pyParse(s)
		if err == nil {
			if pyErr != nil {
				t.Fatalf("ParseMember(%q) accepted what Python rejects", s)
			}
			if py.start.Cmp(big.NewInt(int64(m.Start))) != 0 || py.host != m.Hostname || py.pid != m.PID || py.id != m.ID {
				t.Fatalf("ParseMember(%q) = %+v, Python reads %v %q %q %q", s, m, py.start, py.host, py.pid, py.id)
			}
			again, err := ParseMember(m.String())
			if err != nil || again != m {
				t.Fatalf("round trip of %q: %+v %v", s, again, err)
			}
			start, _, _ := strings.Cut(s, ":")
			if canonical := strconv.FormatUint(uint64(m.Start), 10) == start; canonical && m.String() != s {
				t.Fatalf("String() = %q, want %q", m.String(), s)
			}
			return
		}
		if !errors.Is(err, ErrMalformedMember) {
			t.Fatalf("ParseMember(%q) error %v does not wrap ErrMalformedMember", s, err)
		}
		if pyErr == nil {
			start, _, _ := strings.Cut(s, ":")
			asciiDigits := start != "" && strings.Trim(start, "0123456789") == ""
			if asciiDigits && py.start.Cmp(big.NewInt(RingSize)) < 0 {
				t.Fatalf("ParseMember(%q) rejected a canonical member Python reads: %v", s, err)
			}
		}
	})
}

func TestPyIntRules(t *testing.T) {
	for in, want := range map[string]string{
		"12": "12", " 12 ": "12", "+7": "7", "-7": "-7", "1_000": "1000", "007": "7", "٥": "5", "१२": "12",
	} {
		v, ok := pyInt(in)
		if !ok || v.String() != want {
			t.Errorf("pyInt(%q) = %v %v, want %s", in, v, ok, want)
		}
	}
	for _, in := range []string{"", " ", "_1", "1_", "1__0", "1.0", "0x10", "+", "1 2"} {
		if v, ok := pyInt(in); ok {
			t.Errorf("pyInt(%q) = %v, want error", in, v)
		}
	}
}
