package pipeline

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// The summary's next steps: what a person does with a render to get a running node, as commands that work when
// pasted (cmd/render-static's TestNextStepsPasted runs them), and the words around them. docs/my-site.md is the
// same path written out.

// Site is what the next steps need of a render besides its live.ign: the cluster's domain, the node's IPs, the
// architecture of its live ISO and the workers' names.
type Site struct {
	ClusterDomain string   // <name>.<baseDomain>
	NodeIPs       []string // primary first
	Arch          string   // the install-config's architecture (amd64, arm64, ppc64le, s390x)
	Workers       []string
}

// liveISO is the name the next steps give the live ISO a person downloads: RHCOS's file name for the architecture
// (rhcos-live.<arch>.iso, the architecture as uname -m says it).
func (s Site) liveISO() string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[s.Arch]
	if arch == "" {
		arch = s.Arch
	}
	return "rhcos-live." + arch + ".iso"
}

// nextSteps are the numbered steps, commands indented on lines of their own.
func (s Summary) nextSteps(dir string) []string {
	site := s.Site
	if site.ClusterDomain == "" || s.LiveBytes == 0 {
		return nil
	}
	name := strings.SplitN(site.ClusterDomain, ".", 2)[0]
	iso := site.liveISO()
	records := "A"
	for _, ip := range site.NodeIPs {
		if strings.Contains(ip, ":") {
			records = "A and AAAA"
			if len(site.NodeIPs) == 1 {
				records = "AAAA"
			}
		}
	}
	steps := []string{
		fmt.Sprintf("DNS (%s records): api.%s, api-int.%s and *.apps.%s -> %s",
			records, site.ClusterDomain, site.ClusterDomain, site.ClusterDomain, strings.Join(site.NodeIPs, ", ")),
		fmt.Sprintf("the live ISO: %s of the release the images come from (openshift-install coreos print-stream-json names it; OKD: its SCOS or FCOS live ISO), in this folder", iso),
	}
	live := filepath.Join(dir, "live.ign")
	if s.LiveEmbed.Bytes > 0 && !s.LiveEmbed.Fits() {
		steps = append(steps, fmt.Sprintf("live.ign does not fit the ISO: boot the PXE images with it instead (docs/install.md, \"When live.ign does not fit\")\n"+
			"       coreos-installer pxe ignition wrap -i %s -o %s-live.img", live, name))
	} else {
		embed := fmt.Sprintf("embed live.ign in a copy of the ISO\n       coreos-installer iso ignition embed -i %s -o %s.iso %s", live, name, iso)
		if s.InstallDevice == "" {
			embed += fmt.Sprintf("\n     no install device was given: name the disk (the install-config's %s, or {%s}) and render again, "+
				"or add coreos.inst.install_dev=/dev/<disk> to %s.iso's kernel arguments (coreos-installer iso kargs modify -a)", InstallationDiskField, InInstallDevice, name)
		}
		steps = append(steps, embed)
	}
	steps = append(steps, fmt.Sprintf("boot the machine from %s.iso: it installs RHCOS with aio.ign, reboots, and serves the API at https://api.%s:6443 "+
		"(KUBECONFIG=%s kubectl get nodes)", name, site.ClusterDomain, filepath.Join(dir, "auth", "kubeconfig")))
	for _, w := range site.Workers {
		steps = append(steps, fmt.Sprintf("worker %s: its own ISO, booted once the control-plane node serves\n       coreos-installer iso ignition embed -i %s -o %s.iso %s",
			w, filepath.Join(dir, WorkersDir, w, WorkerLiveIgnition), w, iso))
	}
	return steps
}

// PrintNextSteps writes the next steps after the summary; expand says the inputs it names ({name}) as the command
// names them (installconfig.Expand).
func (s Summary) PrintNextSteps(w io.Writer, dir string, expand func(string) string) {
	steps := s.nextSteps(dir)
	if len(steps) == 0 {
		return
	}
	fmt.Fprintf(w, "next steps (docs/my-site.md):\n")
	for i, step := range steps {
		fmt.Fprintf(w, "  %d. %s\n", i+1, expand(step))
	}
}
