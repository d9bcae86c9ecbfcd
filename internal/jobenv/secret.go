package jobenv

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const (
	// minSecretBytes is the shortest secret accepted.
	minSecretBytes = 16
	// newSecretBytes is the size of a generated secret.
	newSecretBytes = 32
	// maxSecretFileSize bounds how much of a secret file is read.
	maxSecretFileSize = 64 << 10
)

// LoadSecret returns the job secret localities use to authenticate each
// other; home is the user's home directory.
//
// If TESSERA_SECRET is set (l.Secret) it must hold at least 16 bytes as hex (32
// hex digits). Otherwise the secret is read from the file named by
// TESSERA_SECRET_FILE (l.SecretFile), by default <home>/.tessera/secret, which must not be
// accessible by group or others and must hold the hex secret (surrounding
// whitespace is ignored). A missing file is created with 32 random bytes;
// creation is atomic, so the localities of one job starting together on a
// node all end up with the same secret. Errors never contain the secret.
func (l Launch) LoadSecret(home string) ([]byte, error) {
	if l.Secret != "" {
		return decodeSecret(l.Secret, VarSecret)
	}
	path := l.SecretFile
	if path == "" {
		if home == "" {
			return nil, fmt.Errorf("tessera secret: neither %s nor %s is set and there is no home directory",
				VarSecret, VarSecretFile)
		}
		path = filepath.Join(home, ".tessera", "secret")
	}
	secret, err := readSecretFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createSecretFile(path)
	}
	return secret, err
}

// decodeSecret decodes hex text from source (an environment variable or a
// file name) without ever echoing the text.
func decodeSecret(text, source string) ([]byte, error) {
	text = strings.TrimSpace(text)
	b, err := hex.DecodeString(text)
	if err != nil {
		// hex errors quote the offending character: do not wrap them.
		return nil, fmt.Errorf("tessera secret: %s is not valid hex (%d characters; want at least %d hex digits)",
			source, len(text), 2*minSecretBytes)
	}
	if len(b) < minSecretBytes {
		return nil, fmt.Errorf("tessera secret: %s is too short: %d bytes, want at least %d (%d hex digits)",
			source, len(b), minSecretBytes, 2*minSecretBytes)
	}
	return b, nil
}

// readSecretFile reads and validates an existing secret file. A missing
// file yields an error matching fs.ErrNotExist.
func readSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("tessera secret: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("tessera secret: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("tessera secret: %s is not a regular file (mode %v)", path, fi.Mode())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("tessera secret: %s has mode %04o and is accessible by group or others; "+
			"run `chmod 600 %s`", path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("tessera secret: reading %s: %w", path, err)
	}
	if len(data) > maxSecretFileSize {
		return nil, fmt.Errorf("tessera secret: %s is larger than %d bytes", path, maxSecretFileSize)
	}
	return decodeSecret(string(data), path)
}

// createSecretFile creates path with a fresh random secret. Several
// processes may race: each writes a complete temporary file and hard-links
// it to path; the first link wins and the others read the winner's file.
func createSecretFile(path string) ([]byte, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tessera secret: creating directory for secret file: %w", err)
	}
	secret := make([]byte, newSecretBytes)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("tessera secret: generating secret: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".secret-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("tessera secret: creating secret file: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = io.WriteString(tmp, hex.EncodeToString(secret)+"\n")
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("tessera secret: writing %s: %w", tmpName, err)
	}
	if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Another process created the file first: use theirs.
			return readSecretFile(path)
		}
		return nil, fmt.Errorf("tessera secret: installing secret file: %w", err)
	}
	syncSecretDir(dir)
	return secret, nil
}

// syncSecretDir makes a new directory entry durable; failures are ignored
// because not every platform can fsync a directory.
func syncSecretDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
