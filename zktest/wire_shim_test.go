package zktest

import (
	"io"

	"github.com/shepherdzk/shepherd/internal/wire/zkwire"
)

// The wire helpers wire_test.go was written against, now in zkwire.

const maxConnectResponse = zkwire.MaxConnectResponse

func frame(body []byte) []byte { return zkwire.Frame(body) }

func readFrame(r io.Reader, limit int) ([]byte, error) { return zkwire.ReadFrame(r, limit) }

func parseReplyHeader(body []byte) (zkwire.ReplyHeader, error) { return zkwire.ParseReplyHeader(body) }
