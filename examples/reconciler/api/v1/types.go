package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Greeting asks for someone to be greeted: the greeting reconciler writes
// the greeting into its status and into a ConfigMap it owns.
type Greeting struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is who to greet.
	Spec GreetingSpec `json:"spec"`

	// Status is the greeting, written by the reconciler through the
	// status subresource.
	// +optional
	Status GreetingStatus `json:"status,omitempty"`
}

// GreetingSpec is the desired state of a Greeting.
type GreetingSpec struct {
	// Name is who to greet.
	Name string `json:"name"`
}

// GreetingStatus is the observed state of a Greeting.
type GreetingStatus struct {
	// Message is the greeting: "Hello, <spec.name>!".
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GreetingList is a list of Greetings.
type GreetingList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items is the list of Greetings.
	Items []Greeting `json:"items"`
}
