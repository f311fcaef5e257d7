package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Color values a Widget may have.
const (
	// ColorRed is a red widget.
	ColorRed = "red"
	// ColorGreen is a green widget.
	ColorGreen = "green"
	// ColorBlue is a blue widget, the default.
	ColorBlue = "blue"
)

// Size bounds of a Widget.
const (
	// MinSize is the smallest spec.size.
	MinSize = 1
	// MaxSize is the largest spec.size.
	MaxSize = 100
)

// PhaseReady is the status.phase of a Widget the widget controller has
// reconciled at its current generation.
const PhaseReady = "Ready"

// ConditionReady is the condition type the widget controller sets to True
// once it has reconciled a Widget's current generation.
const ConditionReady = "Ready"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Widget is an example resource: a sized, colored widget with a message.
// The widget controller reports in its status which generation of the
// spec it has seen.
type Widget struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object's metadata.
	// More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the widget.
	// +optional
	Spec WidgetSpec `json:"spec,omitempty"`

	// Status is the observed state of the widget, written by the widget
	// controller through the status subresource.
	// +optional
	Status WidgetStatus `json:"status,omitempty"`
}

// WidgetSpec is the desired state of a Widget.
type WidgetSpec struct {
	// Size of the widget, from 1 to 100.
	Size int32 `json:"size"`

	// Color of the widget: red, green or blue. Defaults to blue.
	// +optional
	Color string `json:"color,omitempty"`

	// Message is free text carried by the widget.
	// +optional
	Message string `json:"message,omitempty"`
}

// WidgetStatus is the observed state of a Widget.
type WidgetStatus struct {
	// ObservedGeneration is the metadata.generation of the spec the widget
	// controller last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase summarizes the widget's state; "Ready" once the controller has
	// reconciled the current generation.
	// +optional
	Phase string `json:"phase,omitempty"`

	// Conditions are the latest observations of the widget's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items is the list of Widgets.
	Items []Widget `json:"items"`
}
