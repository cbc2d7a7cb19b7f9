package pipeline

import (
	"github.com/render-static/render-static/pkg/operator"
)

// Component is one control-plane component of a render (pkg/operator); the list of components, in the order
// their loops run, is pkg/components' Registry.
type Component = operator.Component
