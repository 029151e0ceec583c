// Command open_cosigned opens a cosigned checkpoint note with Go's
// golang.org/x/mod/sumdb/note: note.Open with the log's verifier key (note.NewVerifier)
// and a witness's C2SP tlog-cosignature v1 verifier (signature type 0x04), which this
// version of the note package does not provide and which is written here from the
// specification, with nothing but crypto/ed25519.
//
// Usage: open_cosigned LOG_VKEY WITNESS_VKEY < note. It prints one line per verified
// signature, "NAME KEYHASH", and exits 1 when note.Open refuses the note.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

type cosignatureV1 struct {
	name string
	hash uint32
	key  ed25519.PublicKey
}

func (v cosignatureV1) Name() string    { return v.name }
func (v cosignatureV1) KeyHash() uint32 { return v.hash }

// Verify checks sig = 8-byte big-endian timestamp || Ed25519 signature of
// "cosignature/v1\ntime <timestamp>\n" || msg.
func (v cosignatureV1) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig[:8])
	if t > 1<<63-1 {
		return false
	}
	signed := []byte("cosignature/v1\ntime " + strconv.FormatUint(t, 10) + "\n")
	signed = append(signed, msg...)
	return ed25519.Verify(v.key, signed, sig[8:])
}

func newCosignatureV1(vkey string) (note.Verifier, error) {
	fields := strings.SplitN(vkey, "+", 3)
	if len(fields) != 3 {
		return nil, fmt.Errorf("malformed witness key")
	}
	raw, err := base64.StdEncoding.DecodeString(fields[2])
	if err != nil || len(raw) != 1+ed25519.PublicKeySize || raw[0] != 0x04 {
		return nil, fmt.Errorf("malformed witness key payload")
	}
	digest := sha256.Sum256(append([]byte(fields[0]+"\n"), raw...))
	hash := binary.BigEndian.Uint32(digest[:4])
	if fmt.Sprintf("%08x", hash) != fields[1] {
		return nil, fmt.Errorf("witness key hash mismatch")
	}
	return cosignatureV1{fields[0], hash, ed25519.PublicKey(raw[1:])}, nil
}

func main() {
	log, err := note.NewVerifier(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	witness, err := newCosignatureV1(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	msg, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	n, err := note.Open(msg, note.VerifierList(log, witness))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var out bytes.Buffer
	for _, sig := range n.Sigs {
		fmt.Fprintf(&out, "%s %08x\n", sig.Name, sig.Hash)
	}
	os.Stdout.Write(out.Bytes())
}
