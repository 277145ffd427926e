"""Platform-specific device libraries (``libshmem_device``) and portable extensions."""
