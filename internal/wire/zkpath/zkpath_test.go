package zkpath

import (
	"errors"
	"testing"
)

func TestValidate(t *testing.T) {
	good := []string{"/a", "/a/b", "/locks/my-lock_1", "/zookeeperx", "/ü"}
	for _, p := range good {
		if err := Validate(p); err != nil {
			t.Errorf("Validate(%q) = %v, want nil", p, err)
		}
	}
	bad := []string{"", "/", "a", "a/b", "/a/", "/a//b", "/a/./b", "/a/../b", "/zookeeper", "/zookeeper/quota",
		"/a\x00b", "/a\nb", "/\xff", string(make([]byte, MaxLen+1))}
	for _, p := range bad {
		if err := Validate(p); !errors.Is(err, ErrInvalid) {
			t.Errorf("Validate(%q) = %v, want ErrInvalid", p, err)
		}
	}
}

func TestParents(t *testing.T) {
	got := Parents("/a/b/c")
	if len(got) != 2 || got[0] != "/a" || got[1] != "/a/b" {
		t.Fatalf("Parents = %v", got)
	}
	if len(Parents("/a")) != 0 {
		t.Fatal("Parents(/a) not empty")
	}
}

func TestParent(t *testing.T) {
	for p, want := range map[string]string{"/a": "/", "/a/b": "/a", "/a/b/c": "/a/b"} {
		if got := Parent(p); got != want {
			t.Errorf("Parent(%q) = %q, want %q", p, got, want)
		}
	}
}

func FuzzValidate(f *testing.F) {
	for _, s := range []string{"/a", "", "/a/../b", "/zookeeper", "//"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if err := Validate(p); err == nil {
			if p[0] != '/' || p[len(p)-1] == '/' {
				t.Fatalf("accepted %q", p)
			}
		}
	})
}
