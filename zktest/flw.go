package zktest

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// FourLetterWord sends a ZooKeeper four-letter command (srvr, mntr, wchc, cons,
// dump, ruok, ...) to the server at addr and returns its answer. The server must
// allow the word (servers started by this package allow all of them).
func FourLetterWord(ctx context.Context, addr, word string) (string, error) {
	return fourLetterWord(ctx, addr, word, nil)
}

// fourLetterWord sends word over TLS when cfg is not nil.
func fourLetterWord(ctx context.Context, addr, word string, cfg *tls.Config) (string, error) {
	if len(word) != 4 {
		return "", fmt.Errorf("zktest: four-letter word %q is not four letters", word)
	}
	var conn net.Conn
	var err error
	if cfg != nil {
		d := tls.Dialer{Config: cfg}
		conn, err = d.DialContext(ctx, "tcp", addr)
	} else {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return "", fmt.Errorf("zktest: %s to %s: %w", word, addr, err)
	}
	defer conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	if _, err := io.WriteString(conn, word); err != nil {
		return "", fmt.Errorf("zktest: %s to %s: %w", word, addr, err)
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("zktest: %s to %s: %w", word, addr, err)
	}
	return string(b), nil
}

// ParseMntr turns the output of "mntr" into a map from key (zk_packets_received,
// zk_watch_count, ...) to value.
func ParseMntr(out string) map[string]string {
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// serverMode returns the "Mode:" of an srvr answer ("standalone", "leader",
// "follower"), or "" when the server is not serving.
func serverMode(srvr string) string {
	sc := bufio.NewScanner(strings.NewReader(srvr))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
