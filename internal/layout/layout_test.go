package layout

import (
	"testing"
)

// at is what each kind leaves at its path while held (a holder's node, a
// line's node, a record), and, for the kinds that leave something, while
// idle.
func at(k *Recipe, held bool) Seen {
	switch k {
	case FairMutex:
		if held {
			return Seen{Children: []Child{{Name: "_c_x-lock-0000000001", Contender: lockKind}}}
		}
	case RWLock:
		if held {
			return Seen{Children: []Child{{Name: "_c_x-__READ__0000000001", Contender: readKind}}}
		}
	case FairElection:
		if held {
			return Seen{Children: []Child{{Name: "_c_x-latch-0000000001", Contender: latchKind}}}
		}
	case NonFairMutex:
		s := Seen{Data: []byte(NonFairLockStamp + "g")}
		if held {
			s.Children = []Child{{Name: NonFairLockNode}}
		}
		return s
	case NonFairElection:
		s := Seen{Data: []byte(NonFairLeaderStamp + "g")}
		if held {
			s.Children = []Child{{Name: NonFairLeaderNode, Ephemeral: true}}
		}
		return s
	case Semaphore:
		s := Seen{Data: []byte(SemaphoreStamp + "2")}
		if held {
			s.Children = []Child{{Name: SemaphoreLocks}, {Name: SemaphoreLeases}, {Name: SemaphoreSlots}}
		}
		return s
	case Schedule:
		s := Seen{Data: []byte(ScheduleStamp)}
		if held {
			s.Children = []Child{{Name: ScheduleLeader}, {Name: ScheduleState}}
		}
		return s
	}
	return Seen{}
}

// TestEveryKindRefusesEveryOther: each kind's path, held or idle, is
// refused by every other kind and taken by its own; what a kind leaves
// nothing of when idle is free.
func TestEveryKindRefusesEveryOther(t *testing.T) {
	for _, first := range Kinds {
		for _, held := range []bool{true, false} {
			s := at(first, held)
			got, _ := KindOf(Classify(s))
			empty := len(s.Data) == 0 && len(s.Children) == 0
			if empty {
				if got != nil {
					t.Errorf("%s idle leaves nothing, yet is classified %s", first, got)
				}
			} else if got != first {
				t.Errorf("%s (held %v) is classified %v", first, held, got)
			}
			for _, second := range Kinds {
				m := Refuse(second, s)
				switch {
				case second == first || empty:
					if m != nil {
						t.Errorf("%s (held %v) refused by %s: %v", first, held, second, m)
					}
				case m == nil:
					t.Errorf("%s (held %v) not refused by %s", first, held, second)
				case m.There != first:
					t.Errorf("%s (held %v) refused by %s as %s's", first, held, second, m.There)
				}
			}
		}
	}
}

// TestLeaderNamesTwoKinds: a child "leader" is the non-fair election's
// holder's node when ephemeral; a persistent one (an election's path below,
// a schedule's or an application's) stamps no kind by itself, and a
// schedule made before its stamp is known by "leader" and "state" together.
func TestLeaderNamesTwoKinds(t *testing.T) {
	eph, _ := KindOf(Classify(Seen{Children: []Child{{Name: "leader", Ephemeral: true}}}))
	path, _ := KindOf(Classify(Seen{Children: []Child{{Name: "leader"}}}))
	legacy, _ := KindOf(Classify(Seen{Children: []Child{{Name: "leader"}, {Name: "state"}}}))
	if eph != NonFairElection || path != nil || legacy != Schedule {
		t.Fatalf("ephemeral leader: %v, persistent leader: %v, leader and state: %v", eph, path, legacy)
	}
	// A listing alone (no Stat) refuses an ephemeral leader's name to no
	// one: a path named leader below is no evidence.
	for _, k := range Kinds {
		if _, ok := RefusesChild(k, "leader", ""); ok {
			t.Errorf("%s refuses a child named leader", k)
		}
	}
}

// TestKazooLockIsShared: Kazoo's "__lock__" nodes belong to its Lock,
// WriteLock and Election alike: a mutex, a read-write lock and an election
// refuse neither it nor each other over it; the rest refuse it.
func TestKazooLockIsShared(t *testing.T) {
	s := Seen{Children: []Child{{Name: "abc__lock__0000000001", Contender: kazooLockKind}}}
	for _, k := range Kinds {
		shared := k == FairMutex || k == RWLock || k == FairElection
		if m := Refuse(k, s); (m == nil) != shared {
			t.Errorf("%s on a Kazoo lock's path: refusal %v", k, m)
		}
	}
}

// TestForeignChildrenAreNoEvidence: names no kind declares (an
// application's nodes, unparsable names) and a lease- node directly under
// a path classify as nothing and refuse no one.
func TestForeignChildrenAreNoEvidence(t *testing.T) {
	s := Seen{Data: []byte("app data"), Children: []Child{{Name: "config"}, {Name: "x-lease-0000000001", Contender: "lease-"}}}
	if ev := Classify(s); len(ev) != 0 {
		t.Fatalf("evidence: %v", ev)
	}
	for _, k := range Kinds {
		if m := Refuse(k, s); m != nil {
			t.Errorf("%s refused: %v", k, m)
		}
	}
}

// TestMixedPath: a path holding two kinds' nodes is classified by the
// first, and names the other.
func TestMixedPath(t *testing.T) {
	s := Seen{Data: []byte(SemaphoreStamp + "1"), Children: []Child{{Name: SemaphoreLeases}, {Name: NonFairLockNode}}}
	k, others := KindOf(Classify(s))
	if k != Semaphore || len(others) != 1 || others[0] != NonFairMutex {
		t.Fatalf("kind %v, others %v", k, others)
	}
}
