// Package manifests embeds the templates and static resources render-static writes itself: pod templates,
// default configs, static resources of each component (manifests/<component>/...), and the documented
// conformance adaptations (manifests/<component>/conformance-adaptations.yaml).
package manifests

import (
	"embed"
	"io/fs"
)

//go:embed */*
var files embed.FS

// FS is every embedded file, by its path below manifests/ ("kube-apiserver/pod.yaml").
var FS fs.FS = files

// Read returns one embedded file; a missing file is a programming error reported as an error.
func Read(name string) ([]byte, error) { return fs.ReadFile(files, name) }
