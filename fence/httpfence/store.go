package httpfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/shepherdzk/shepherd/fence/sqlfence"
)

// MemoryStore is a Store for a service of one process: the highest token
// per resource, in memory. It forgets them when the process ends: a
// service restarted admits a stale token again until the newer holder has
// called it (use SQLStore where that matters). It keeps one entry per
// resource ever seen. The zero value is an empty store.
type MemoryStore struct {
	mu        sync.Mutex
	resources map[string]*memEntry
}

// memEntry is one resource's: turn is held (a value in it) while a
// request of the resource runs; highest is read and written only by the
// turn's holder.
type memEntry struct {
	turn    chan struct{}
	highest int64
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// Enter implements Store.
func (s *MemoryStore) Enter(ctx context.Context, resource string, token int64) (func(), error) {
	if err := validate(resource, token); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.resources == nil {
		s.resources = map[string]*memEntry{}
	}
	e := s.resources[resource]
	if e == nil {
		e = &memEntry{turn: make(chan struct{}, 1), highest: -1}
		s.resources[resource] = e
	}
	s.mu.Unlock()
	select {
	case e.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if token < e.highest {
		err := &StaleError{Resource: resource, Token: token, Newer: e.highest}
		<-e.turn
		return nil, err
	}
	e.highest = token
	var once sync.Once
	return func() { once.Do(func() { <-e.turn }) }, nil
}

// SQLStore is a Store for a service of several processes: the highest
// token per resource is sqlfence's table (create it with sqlfence.Ensure),
// shared by every process through the database.
//
// Enter raises the token in a transaction of its own, committed at once
// (a process that dies while its handler runs has still recorded it), then
// holds the resource's row lock in a second transaction until leave: the
// requests of one resource never overlap, across processes. Each request
// in progress so uses one connection of db. On PostgreSQL a handler must
// not call sqlfence.Check for the same resource in the same database: it
// would wait for the lock its own request holds. On SQLite the lock is the
// whole database's write lock: give the store a database file of its own,
// not the one the handlers write.
type SQLStore struct {
	db *sql.DB
}

// NewSQLStore returns a SQLStore on db; a nil db is an error matching
// ErrInvalid.
func NewSQLStore(db *sql.DB) (*SQLStore, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil database", ErrInvalid)
	}
	return &SQLStore{db: db}, nil
}

// Enter implements Store.
func (s *SQLStore) Enter(ctx context.Context, resource string, token int64) (func(), error) {
	if err := validate(resource, token); err != nil {
		return nil, err
	}
	// 1. Raise, and commit: durable before the handler acts.
	if err := s.raise(ctx, resource, token); err != nil {
		return nil, err
	}
	// 2. Hold the row: the guard again (the same token passes, unless a
	// newer one came in between), in a transaction kept to leave. Not
	// bound to ctx, which ends when the client goes away: the lock must
	// last as long as the handler runs (the guard's wait honours ctx).
	tx, err := s.db.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return nil, err
	}
	if err := sqlfence.Check(ctx, tx, resource, token); err != nil {
		tx.Rollback()
		return nil, translate(err)
	}
	var once sync.Once
	return func() { once.Do(func() { tx.Rollback() }) }, nil
}

// raise runs the guard in a transaction of its own, and commits it.
func (s *SQLStore) raise(ctx context.Context, resource string, token int64) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := sqlfence.Check(ctx, tx, resource, token); err != nil {
		return translate(err)
	}
	return tx.Commit()
}

// translate makes sqlfence's stale error this package's.
func translate(err error) error {
	var se *sqlfence.StaleError
	if errors.As(err, &se) {
		return &StaleError{Resource: se.Resource, Token: se.Token, Newer: se.Newer}
	}
	return err
}
