package pipeline

import (
	"crypto/fips140"
	"fmt"
	"strings"

	"github.com/render-static/render-static/pkg/installconfig"
)

// A FIPS cluster's keys are made by FIPS 140-3 validated cryptography: the installer refuses fips: true unless its
// own cryptography is (openshift/installer pkg/hostcrypt VerifyHostTargetState: the host in FIPS mode, with the
// FIPS-capable installer binary, whose Go uses the host's OpenSSL). render-static's cryptography is Go's own, whose
// FIPS 140-3 module is switched on for a whole process at its start, by GODEBUG=fips140=on
// (https://go.dev/doc/security/fips140), whatever the host's mode. So a render of a fips: true install-config
// runs only in a process in that mode: the command starts itself again in it (FIPSModeError, main.go), and
// anything else that renders (fleet, renew, tests) is refused with a FIPSModeError before any key is made.

// FIPSModeError says that the install-config asks for a FIPS cluster and this process's cryptography is not in
// FIPS 140-3 mode.
type FIPSModeError struct{}

func (FIPSModeError) Error() string {
	return "fips: true needs the render's keys made in FIPS 140-3 mode, and this process's cryptography is not in it: " +
		"run render-static with GODEBUG=fips140=on (render-static, its renew and its fleet do so by themselves)"
}

// CheckCryptoMode returns a FIPSModeError when ic asks for a FIPS cluster (fips: true) and the process is not in
// FIPS 140-3 mode.
func CheckCryptoMode(ic *installconfig.InstallConfig) error {
	if ic != nil && ic.FIPS && !fips140.Enabled() {
		return FIPSModeError{}
	}
	return nil
}

// FIPSGODEBUG is the GODEBUG setting that starts a process in FIPS 140-3 mode.
const FIPSGODEBUG = "fips140=on"

// FIPSModeEnv is env (KEY=value entries) with FIPSGODEBUG added to GODEBUG, and whether it had to be added: false
// when GODEBUG already holds a fips140 setting, which a second start would not change.
func FIPSModeEnv(env []string) ([]string, bool) {
	out := make([]string, 0, len(env)+1)
	found := false
	for _, kv := range env {
		v, ok := strings.CutPrefix(kv, "GODEBUG=")
		if !ok {
			out = append(out, kv)
			continue
		}
		for _, s := range strings.Split(v, ",") {
			if strings.HasPrefix(strings.TrimSpace(s), "fips140=") {
				return env, false
			}
		}
		found = true
		if v == "" {
			out = append(out, "GODEBUG="+FIPSGODEBUG)
		} else {
			out = append(out, "GODEBUG="+v+","+FIPSGODEBUG)
		}
	}
	if !found {
		out = append(out, "GODEBUG="+FIPSGODEBUG)
	}
	return out, true
}

// FIPSModeLine is the summary's line on the cryptography of a FIPS render: Go's FIPS 140-3 module and its version
// ("latest" when the binary was built without GOFIPS140, which selects a frozen, validated module version; Go
// lists the certified ones in $GOROOT/lib/fips140/certified.txt).
func FIPSModeLine() string {
	if !fips140.Enabled() {
		return ""
	}
	return fmt.Sprintf("FIPS 140-3 mode (Go Cryptographic Module %s)", fips140.Version())
}
