# The one version of resmem. `resmem --version` prints it (//engine/cli:version_h writes it into
# engine/cli/version.h) and the packages carry it (packaging/BUILD: the .deb names and control
# files, the dkms PACKAGE_VERSION, /usr/src/resmem-VERSION).
RESMEM_VERSION = "1.0.0"
