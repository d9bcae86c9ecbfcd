package jobenv

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// secretEnvFunc returns a getenv backed by m, so tests never see the real
// environment.
func secretEnvFunc(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// loadSecret is what a locality does: its launch from getenv, then the
// secret that launch names.
func loadSecret(getenv func(string) string, home string) ([]byte, error) {
	l, err := FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	return l.LoadSecret(home)
}

func TestLoadSecretFromEnv(t *testing.T) {
	home := t.TempDir() // must stay untouched
	valid16 := "00112233445566778899aabbccddeeff"
	valid32 := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, value string
		want        []byte
		errSub      string
	}{
		{name: "16 bytes", value: valid16, want: mustHex(t, valid16)},
		{name: "32 bytes", value: valid32, want: mustHex(t, valid32)},
		{name: "upper case and newline", value: strings.ToUpper(valid16) + "\n", want: mustHex(t, valid16)},
		{name: "bad hex", value: "zz112233445566778899aabbccddeeff", errSub: "not valid hex"},
		{name: "odd length", value: valid16 + "a", errSub: "not valid hex"},
		{name: "short", value: "00112233445566778899aabbccddee", errSub: "too short: 15 bytes"},
		{name: "very short", value: "00", errSub: "too short: 1 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := loadSecret(secretEnvFunc(map[string]string{
				"TESSERA_SECRET":      tc.value,
				"TESSERA_SECRET_FILE": filepath.Join(home, "unused"),
			}), home)
			if tc.errSub != "" {
				if err == nil {
					t.Fatalf("no error, got %x", got)
				}
				msg := err.Error()
				if !strings.Contains(msg, tc.errSub) || !strings.Contains(msg, "TESSERA_SECRET") {
					t.Errorf("error %q should contain %q and name TESSERA_SECRET", msg, tc.errSub)
				}
				if v := strings.TrimSpace(tc.value); len(v) >= 2 && strings.Contains(msg, v) {
					t.Errorf("error %q reveals the secret", msg)
				}
				if strings.Contains(msg, "U+") || strings.Contains(msg, "'z'") {
					t.Errorf("error %q reveals part of the secret", msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("got %x, want %x", got, tc.want)
			}
		})
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("TESSERA_SECRET set, yet files were created in home: %v", entries)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoadSecretCreatesFile(t *testing.T) {
	home := t.TempDir()
	getenv := secretEnvFunc(nil)
	s1, err := loadSecret(getenv, home)
	if err != nil {
		t.Fatal(err)
	}
	if len(s1) != 32 {
		t.Fatalf("generated secret has %d bytes, want 32", len(s1))
	}
	dir := filepath.Join(home, ".tessera")
	path := filepath.Join(dir, "secret")
	checkMode(t, dir, 0o700|os.ModeDir)
	checkMode(t, path, 0o600)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(s1) + "\n"; string(data) != want {
		t.Errorf("file content %q, want %q", data, want)
	}
	checkOnlySecret(t, dir)

	s2, err := loadSecret(getenv, home)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s1, s2) {
		t.Errorf("second call returned a different secret: %x vs %x", s2, s1)
	}

	// A file the user wrote by hand, with whitespace, is accepted.
	hand := "  " + strings.Repeat("5a", 20) + "\n\n"
	if err := os.WriteFile(path, []byte(hand), 0o600); err != nil {
		t.Fatal(err)
	}
	s3, err := loadSecret(getenv, home)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s3, bytes.Repeat([]byte{0x5a}, 20)) {
		t.Errorf("hand-written secret read as %x", s3)
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (os.ModeDir | os.ModePerm); got != want {
		t.Errorf("%s has mode %v, want %v", path, got, want)
	}
}

// checkOnlySecret fails if dir holds anything but the secret file, e.g. a
// leftover temporary file.
func checkOnlySecret(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "secret" {
		t.Errorf("%s contains %q, want only \"secret\"", dir, names)
	}
}

func TestLoadSecretRefusesOpenFile(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".tessera")
	path := filepath.Join(dir, "secret")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	content := strings.Repeat("ab", 32) + "\n"
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o602, 0o666} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		got, err := loadSecret(secretEnvFunc(nil), home)
		if err == nil {
			t.Errorf("mode %04o: accepted, got %x", mode, got)
			continue
		}
		msg := err.Error()
		for _, want := range []string{path, "chmod 600"} {
			if !strings.Contains(msg, want) {
				t.Errorf("mode %04o: error %q does not contain %q", mode, msg, want)
			}
		}
		if want := "mode " + octal4(mode); !strings.Contains(msg, want) {
			t.Errorf("mode %04o: error %q does not contain %q", mode, msg, want)
		}
		if strings.Contains(msg, strings.TrimSpace(content)) {
			t.Errorf("error %q reveals the secret", msg)
		}
	}
	// Owner-only modes are fine.
	for _, mode := range []os.FileMode{0o600, 0o400} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := loadSecret(secretEnvFunc(nil), home); err != nil {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
}

func octal4(m os.FileMode) string {
	const digits = "01234567"
	return string([]byte{'0', digits[m>>6&7], digits[m>>3&7], digits[m&7]})
}

func TestLoadSecretRefusesBadFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, content, errSub string }{
		{"empty", "", "too short: 0 bytes"},
		{"short", strings.Repeat("ab", 15) + "\n", "too short: 15 bytes"},
		{"not hex", "this is not a secret at all, not even close\n", "not valid hex"},
		{"odd", strings.Repeat("a", 33), "not valid hex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := loadSecret(secretEnvFunc(map[string]string{"TESSERA_SECRET_FILE": path}), "")
			if err == nil {
				t.Fatalf("accepted, got %x", got)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.errSub) || !strings.Contains(msg, path) {
				t.Errorf("error %q should contain %q and the file name", msg, tc.errSub)
			}
			// The bad file must be left alone, not replaced.
			if data, _ := os.ReadFile(path); string(data) != tc.content {
				t.Errorf("file was modified to %q", data)
			}
		})
	}
	// A directory is not a secret file.
	if _, err := loadSecret(secretEnvFunc(map[string]string{"TESSERA_SECRET_FILE": dir}), ""); err == nil {
		t.Error("directory accepted as secret file")
	}
}

func TestLoadSecretConcurrentCreate(t *testing.T) {
	home := t.TempDir()
	const n = 16
	secrets := make([][]byte, n)
	errs := make([]error, n)
	var start, wg sync.WaitGroup
	start.Add(1)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			secrets[i], errs[i] = loadSecret(secretEnvFunc(nil), home)
		}()
	}
	start.Done()
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
		if !bytes.Equal(secrets[i], secrets[0]) {
			t.Errorf("goroutine %d got %x, goroutine 0 got %x", i, secrets[i], secrets[0])
		}
	}
	onDisk, err := loadSecret(secretEnvFunc(nil), home)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, secrets[0]) {
		t.Errorf("file holds %x, goroutines got %x", onDisk, secrets[0])
	}
	checkOnlySecret(t, filepath.Join(home, ".tessera"))
}

func TestLoadSecretCustomFile(t *testing.T) {
	home := t.TempDir()
	other := t.TempDir()
	path := filepath.Join(other, "job", "key")
	getenv := secretEnvFunc(map[string]string{"TESSERA_SECRET_FILE": path})
	s1, err := loadSecret(getenv, home)
	if err != nil {
		t.Fatal(err)
	}
	checkMode(t, path, 0o600)
	checkMode(t, filepath.Dir(path), 0o700|os.ModeDir)
	s2, err := loadSecret(getenv, "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s1, s2) {
		t.Errorf("second call returned a different secret")
	}
	if _, err := os.Stat(filepath.Join(home, ".tessera")); !os.IsNotExist(err) {
		t.Errorf("default secret location was touched: %v", err)
	}
	// TESSERA_SECRET wins over the file.
	env := strings.Repeat("cd", 16)
	got, err := loadSecret(secretEnvFunc(map[string]string{
		"TESSERA_SECRET": env, "TESSERA_SECRET_FILE": path}), home)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != env {
		t.Errorf("TESSERA_SECRET ignored: got %x", got)
	}
}

func TestLoadSecretNoHome(t *testing.T) {
	_, err := loadSecret(secretEnvFunc(nil), "")
	if err == nil {
		t.Fatal("no error without home, TESSERA_SECRET or TESSERA_SECRET_FILE")
	}
	if msg := err.Error(); !strings.Contains(msg, "TESSERA_SECRET") {
		t.Errorf("error %q should mention TESSERA_SECRET", msg)
	}
}
