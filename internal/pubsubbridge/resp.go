package pubsubbridge

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The little RESP2 a subscription bridge speaks (bridge.go): it reads the
// commands go-redis's PubSub writes (arrays of bulk strings) and writes
// the replies a Redis server in subscribed mode would.

// Limits on what readCommand accepts; a go-redis PubSub stays far below.
const (
	maxCommandArgs = 1 << 20
	maxBulkLen     = 512 << 20 // Redis's proto-max-bulk-len default
)

// errProtocol is a malformed command from the client side of a bridge.
var errProtocol = errors.New("malformed RESP command on a subscription connection")

// readCommand reads one command: an array of bulk strings.
func readCommand(rd *bufio.Reader) ([]string, error) {
	n, err := readHeader(rd, '*', maxCommandArgs)
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: empty command", errProtocol)
	}
	args := make([]string, 0, min(n, 16)) // grown as arguments arrive
	for range n {
		size, err := readHeader(rd, '$', maxBulkLen)
		if err != nil {
			return nil, noEOF(err)
		}
		if size < 0 {
			return nil, fmt.Errorf("%w: null argument", errProtocol)
		}
		// Grown as the bytes arrive: a length alone allocates nothing.
		var arg strings.Builder
		if _, err := io.CopyN(&arg, rd, int64(size)); err != nil {
			return nil, noEOF(err)
		}
		var crlf [2]byte
		if _, err := io.ReadFull(rd, crlf[:]); err != nil {
			return nil, noEOF(err)
		}
		if crlf != [2]byte{'\r', '\n'} {
			return nil, fmt.Errorf("%w: argument not followed by CRLF", errProtocol)
		}
		args = append(args, arg.String())
	}
	return args, nil
}

// noEOF is err, with io.EOF (the input ended inside a command) as
// io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readHeader reads a line "<kind><n>\r\n" and returns n (-1 ≤ n ≤ max).
func readHeader(rd *bufio.Reader, kind byte, limit int) (int, error) {
	b, err := rd.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return 0, fmt.Errorf("%w: header line too long", errProtocol)
	case err != nil:
		return 0, err
	}
	line := string(b)
	if len(line) < 4 || line[0] != kind || line[len(line)-2] != '\r' {
		return 0, fmt.Errorf("%w: want %q, got %q", errProtocol, kind, strings.TrimRight(line, "\r\n"))
	}
	n, err := strconv.Atoi(line[1 : len(line)-2])
	if err != nil || n < -1 || n > limit {
		return 0, fmt.Errorf("%w: bad length in %q", errProtocol, strings.TrimRight(line, "\r\n"))
	}
	return n, nil
}

// frame builds one reply.
type frame []byte

func (f frame) array(n int) frame {
	f = append(f, '*')
	f = strconv.AppendInt(f, int64(n), 10)
	return append(f, '\r', '\n')
}

func (f frame) bulk(s string) frame {
	f = append(f, '$')
	f = strconv.AppendInt(f, int64(len(s)), 10)
	f = append(f, '\r', '\n')
	f = append(f, s...)
	return append(f, '\r', '\n')
}

func (f frame) integer(n int64) frame {
	f = append(f, ':')
	f = strconv.AppendInt(f, n, 10)
	return append(f, '\r', '\n')
}

// errorReply is an error reply; line breaks in msg become spaces (a RESP
// error is one line).
func errorReply(msg string) frame {
	msg = strings.NewReplacer("\r", " ", "\n", " ").Replace(msg)
	f := append(frame{'-'}, msg...)
	return append(f, '\r', '\n')
}

// helloReply answers HELLO 2 as server (the Router's "rediskit-" + owner):
// the fields go-redis reads, as a RESP2 map (a flat array of pairs).
func helloReply(server string) frame {
	return frame(nil).array(4).bulk("server").bulk(server).bulk("proto").integer(2)
}

// encodeMessage is what a server in subscribed mode sends for msg, one of
// the values (*redis.Subscription, *redis.Message, *redis.Pong) that
// PubSub.Receive returns, or nil for another value. A shard message
// (smessage) is sent as a message: go-redis reads both into the same
// *redis.Message, so the subscriber sees no difference.
func encodeMessage(msg any) frame {
	switch m := msg.(type) {
	case *redis.Subscription:
		return frame(nil).array(3).bulk(m.Kind).bulk(m.Channel).integer(int64(m.Count))
	case *redis.Message:
		switch {
		case m.Pattern != "":
			return frame(nil).array(4).bulk("pmessage").bulk(m.Pattern).bulk(m.Channel).bulk(m.Payload)
		case m.PayloadSlice != nil:
			f := frame(nil).array(3).bulk("message").bulk(m.Channel).array(len(m.PayloadSlice))
			for _, s := range m.PayloadSlice {
				f = f.bulk(s)
			}
			return f
		}
		return frame(nil).array(3).bulk("message").bulk(m.Channel).bulk(m.Payload)
	case *redis.Pong:
		return frame(nil).array(2).bulk("pong").bulk(m.Payload)
	}
	return nil
}
