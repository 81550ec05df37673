package pubsubbridge

import (
	"bufio"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestReadCommand reads what a go-redis PubSub writes, and refuses what
// it never writes.
func TestReadCommand(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr error // nil: want is read
	}{
		{"subscribe", "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n$0\r\n\r\n", []string{"subscribe", "a", ""}, nil},
		{"binary argument", "*2\r\n$7\r\npublish\r\n$4\r\n\r\n\x00\xff\r\n", []string{"publish", "\r\n\x00\xff"}, nil},
		{"end of input", "", nil, io.EOF},
		{"truncated argument", "*1\r\n$4\r\npi", nil, io.ErrUnexpectedEOF},
		{"inline command", "PING\r\n", nil, errProtocol},
		{"empty array", "*0\r\n", nil, errProtocol},
		{"null argument", "*1\r\n$-1\r\n", nil, errProtocol},
		{"bad length", "*x\r\n", nil, errProtocol},
		{"too many arguments", "*99999999\r\n", nil, errProtocol},
		{"no CRLF after an argument", "*1\r\n$4\r\npingXX", nil, errProtocol},
		{"LF without CR", "*1\n", nil, errProtocol},
		{"end inside a header", "*2\r\n$4", nil, io.ErrUnexpectedEOF},
		{"header line too long", "*" + strings.Repeat("1", 5000) + "\r\n", nil, errProtocol},
	}
	for _, tt := range tests {
		got, err := readCommand(bufio.NewReader(strings.NewReader(tt.in)))
		switch {
		case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.wantErr)
		case tt.wantErr == nil && (err != nil || !slices.Equal(got, tt.want)):
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// FuzzReadCommand: any command encoded as go-redis writes it reads back
// the same, and no input makes readCommand panic.
func FuzzReadCommand(f *testing.F) {
	f.Add("subscribe", "news", []byte("*2\r\n$4\r\nping\r\n"))
	f.Add("", "\r\n", []byte("*-1\r\n"))
	f.Fuzz(func(t *testing.T, a, b string, raw []byte) {
		in := frame(nil).array(2).bulk(a).bulk(b)
		got, err := readCommand(bufio.NewReader(strings.NewReader(string(in))))
		if err != nil || !slices.Equal(got, []string{a, b}) {
			t.Fatalf("%q read back as %q, %v", in, got, err)
		}
		_, _ = readCommand(bufio.NewReader(strings.NewReader(string(raw))))
	})
}
