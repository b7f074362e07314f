# Build and install nanprop as a C (and Fortran) library.
#
#   make                                 # cargo build --release
#   make install PREFIX=/usr/local       # also DESTDIR=... for staged installs (packaging)
#   make uninstall PREFIX=/usr/local
#
# Installs, under $(DESTDIR)$(PREFIX):
#   lib/libnanprop.so.$(VERSION)  with SONAME libnanprop.so.$(ABI), and the links
#   lib/libnanprop.so.$(ABI) and lib/libnanprop.so;  lib/libnanprop.a
#   include/nanprop.h, include/nanprop.f90;  lib/pkgconfig/nanprop.pc;  bin/nanprop
#   when gfortran is present: include/nanprop.mod, lib/libnanprop_fortran.a (the module's own
#   procedures) and lib/pkgconfig/nanprop-fortran.pc (a .mod file is specific to the gfortran
#   version that made it: other compilers build include/nanprop.f90 themselves)
#
# A Makefile over cargo rather than cargo-c: cargo-c would have to be built from source on every
# machine (it is not packaged here), and it installs no Fortran module. The SONAME is set only
# on the library built for installation (`cargo rustc` with a link argument, in its own target
# directory), so the libraries in target/ that the test suite links keep working without links.
#
# ABI: for 0.y versions the minor number is the ABI version (0.y and 0.z may be incompatible),
# as cargo-c does; from 1.0 on, the major number.

PREFIX ?= /usr/local
DESTDIR ?=
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CARGO ?= cargo
FC ?= gfortran
INSTALL ?= install

VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
MAJOR := $(word 1,$(subst ., ,$(VERSION)))
MINOR := $(word 2,$(subst ., ,$(VERSION)))
ABI := $(if $(filter 0,$(MAJOR)),0.$(MINOR),$(MAJOR))
SONAME := libnanprop.so.$(ABI)
RELEASE := target/release
STAGE := target/install
# What a static link needs besides libnanprop.a (cargo rustc --print native-static-libs).
STATIC_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc

.PHONY: all install uninstall clean-install

all:
	$(CARGO) build --release

# The shared library with its SONAME, the static library, the command, the module.
$(STAGE)/stamp: Cargo.toml build.rs $(shell find src -name '*.rs') include/nanprop.f90
	$(CARGO) build --release --lib --bin nanprop
	$(CARGO) rustc --release --lib --crate-type cdylib --target-dir $(STAGE)/build \
	    -- -C link-arg=-Wl,-soname,$(SONAME)
	mkdir -p $(STAGE)
	cp $(STAGE)/build/release/libnanprop.so $(STAGE)/libnanprop.so.$(VERSION)
	cp $(RELEASE)/libnanprop.a $(STAGE)/libnanprop.a
	rm -f $(STAGE)/nanprop.mod $(STAGE)/libnanprop_fortran.a
	if command -v $(FC) >/dev/null 2>&1; then \
	  $(FC) -O2 -fPIC -c include/nanprop.f90 -J $(STAGE) -o $(STAGE)/nanprop_module.o && \
	  ar rcs $(STAGE)/libnanprop_fortran.a $(STAGE)/nanprop_module.o; \
	fi
	touch $@

install: $(STAGE)/stamp
	$(INSTALL) -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(PKGCONFIGDIR)
	$(INSTALL) -m 755 $(STAGE)/libnanprop.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libnanprop.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libnanprop.so
	$(INSTALL) -m 644 $(STAGE)/libnanprop.a $(DESTDIR)$(LIBDIR)/
	$(INSTALL) -m 644 include/nanprop.h include/nanprop.f90 $(DESTDIR)$(INCLUDEDIR)/
	if [ -f $(STAGE)/nanprop.mod ]; then \
	  $(INSTALL) -m 644 $(STAGE)/nanprop.mod $(DESTDIR)$(INCLUDEDIR)/ && \
	  $(INSTALL) -m 644 $(STAGE)/libnanprop_fortran.a $(DESTDIR)$(LIBDIR)/ && \
	  sed -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	      nanprop-fortran.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/nanprop-fortran.pc; \
	fi
	$(INSTALL) -m 755 $(RELEASE)/nanprop $(DESTDIR)$(BINDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' -e 's|@STATIC_LIBS@|$(STATIC_LIBS)|' \
	    nanprop.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/nanprop.pc

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libnanprop.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME) \
	      $(DESTDIR)$(LIBDIR)/libnanprop.so $(DESTDIR)$(LIBDIR)/libnanprop.a \
	      $(DESTDIR)$(INCLUDEDIR)/nanprop.h $(DESTDIR)$(INCLUDEDIR)/nanprop.f90 \
	      $(DESTDIR)$(INCLUDEDIR)/nanprop.mod $(DESTDIR)$(BINDIR)/nanprop \
	      $(DESTDIR)$(LIBDIR)/libnanprop_fortran.a $(DESTDIR)$(PKGCONFIGDIR)/nanprop.pc \
	      $(DESTDIR)$(PKGCONFIGDIR)/nanprop-fortran.pc

clean-install:
	rm -rf $(STAGE)
