package owned

// CollectAsTheyEnd: Windows has no adoption of orphans.
func CollectAsTheyEnd() {}
