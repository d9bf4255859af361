// Command release writes the Go-built parts of a release into dist/ for
// hack/release.sh (`make release`), which compiles the binaries first:
//
//	go run ./hack/release image -version v0.2.0 -revision SHA -out dist/image -tar dist/image.tar -digest-file dist/image.digest linux/amd64=dist/vmobs_v0.2.0_linux_amd64 ...
//	go run ./hack/release install -version v0.2.0 -image-repo ghcr.io/vmobs/vmobs -image-digest-file dist/image.digest -out dist/install.yaml
//	go run ./hack/release image -version devel -revision SHA -out bin/image -docker-tar bin/image.tar -tag vmobs:dev linux/amd64=bin/vmobs_linux_amd64
//	go run ./hack/release krew -version v0.2.0 -dir dist darwin/arm64=dist/kubectl-vmobs_v0.2.0_darwin_arm64 ...
//
// The work is in internal/release; this only reads flags.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vmobs/vmobs/internal/release"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("want a command: install, image or krew")
	}
	fs := flag.NewFlagSet("release "+args[0], flag.ContinueOnError)
	version := fs.String("version", "", "the release, vX.Y.Z")
	source := fs.String("source", "https://github.com/vmobs/vmobs", "the repository's URL: image label, krew homepage and download URLs")
	license := fs.String("license", "LICENSE", "the license file to ship in the image and the krew archives")
	epoch := fs.Int64("created", 0, "Unix time of the files and the image (the commit's, for reproducible artefacts); 0 is now")
	switch args[0] {
	case "install":
		config := fs.String("config", "config", "the repository's config/")
		repo := fs.String("image-repo", release.ImageName, "the repository the image is pushed to")
		out := fs.String("out", "dist/install.yaml", "where to write the manifest")
		digestFile := fs.String("image-digest-file", "", "pin the image by the digest in this file (what `release image -digest-file` wrote)")
		if err := parse(fs, args[1:], version); err != nil {
			return err
		}
		var digest string
		if *digestFile != "" {
			d, err := os.ReadFile(*digestFile)
			if err != nil {
				return err
			}
			digest = strings.TrimSpace(string(d))
		}
		b, err := release.RenderInstall(*config, release.Install{Version: *version, ImageRepo: *repo, Digest: digest})
		if err != nil {
			return err
		}
		return os.WriteFile(*out, b, 0o644)
	case "image":
		revision := fs.String("revision", "", "the commit")
		out := fs.String("out", "dist/image", "the OCI image layout directory to create")
		tarPath := fs.String("tar", "", "also write the layout as this tar archive")
		dockerTar := fs.String("docker-tar", "", "also write the image, of one platform, as this `docker load` archive")
		tag := fs.String("tag", "", "the -docker-tar archive's tag")
		digestFile := fs.String("digest-file", "", "also write the image index's digest (sha256:...), which a push keeps, to this file")
		// A version as `make image` has it, a release's or git describe's
		// or "devel": it names the image, not a download.
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *version == "" {
			return fmt.Errorf("-version: name the version")
		}
		if (*dockerTar == "") != (*tag == "") {
			return fmt.Errorf("-docker-tar and -tag go together")
		}
		if *revision == "" {
			return fmt.Errorf("-revision: name the commit")
		}
		bins, err := binaries(fs.Args())
		if err != nil {
			return err
		}
		img := release.Image{Version: *version, Revision: *revision, Source: *source, Created: created(*epoch), Binaries: bins, License: *license}
		idx, err := release.BuildImage(img)
		if err != nil {
			return err
		}
		if err := release.WriteLayout(*out, *version, idx); err != nil {
			return err
		}
		if *digestFile != "" {
			d, err := idx.Digest()
			if err != nil {
				return err
			}
			if err := os.WriteFile(*digestFile, []byte(d.String()+"\n"), 0o644); err != nil {
				return err
			}
		}
		if *tarPath != "" {
			if err := writeFile(*tarPath, func(f *os.File) error { return release.WriteDirTar(f, *out, img.Created) }); err != nil {
				return err
			}
		}
		if *dockerTar == "" {
			return nil
		}
		return writeFile(*dockerTar, func(f *os.File) error { return release.WriteDockerTar(f, *tag, idx) })
	case "krew":
		tmpl := fs.String("template", "hack/krew/vmobs.yaml.tmpl", "the krew manifest's template")
		dir := fs.String("dir", "dist", "where to write the archives and vmobs.krew.yaml")
		if err := parse(fs, args[1:], version); err != nil {
			return err
		}
		bins, err := binaries(fs.Args())
		if err != nil {
			return err
		}
		t, err := os.ReadFile(*tmpl)
		if err != nil {
			return err
		}
		k := release.Krew{Version: *version, Homepage: *source}
		for _, b := range bins {
			if !release.KrewSupports(b.OS, b.Arch) {
				fmt.Fprintf(os.Stderr, "release: no krew archive for %s/%s, where krew does not install plugins; its binary ships as is\n", b.OS, b.Arch)
				continue
			}
			name := release.KrewArchiveName(*version, b.OS, b.Arch)
			path := filepath.Join(*dir, name)
			err := writeFile(path, func(f *os.File) error {
				return release.WriteKrewArchive(f, b.Path, *license, created(*epoch))
			})
			if err != nil {
				return err
			}
			sum, err := release.FileSHA256(path)
			if err != nil {
				return err
			}
			k.Platforms = append(k.Platforms, release.KrewPlatform{
				OS: b.OS, Arch: b.Arch, SHA256: sum, Bin: release.PluginBinary,
				URI: release.ReleaseDownloadURL(*source, *version, name),
			})
		}
		m, err := release.KrewManifest(string(t), k)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(*dir, "vmobs.krew.yaml"), m, 0o644)
	default:
		return fmt.Errorf("unknown command %q: want install, image or krew", args[0])
	}
}

func parse(fs *flag.FlagSet, args []string, version *string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !strings.HasPrefix(*version, "v") {
		return fmt.Errorf("-version %q: want vX.Y.Z", *version)
	}
	return nil
}

// binaries reads OS/ARCH=PATH arguments.
func binaries(args []string) ([]release.PlatformBinary, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("name the binaries as OS/ARCH=PATH")
	}
	var out []release.PlatformBinary
	for _, a := range args {
		platform, path, ok := strings.Cut(a, "=")
		goos, arch, ok2 := strings.Cut(platform, "/")
		if !ok || !ok2 || path == "" {
			return nil, fmt.Errorf("%q: want OS/ARCH=PATH", a)
		}
		out = append(out, release.PlatformBinary{OS: goos, Arch: arch, Path: path})
	}
	return out, nil
}

func created(epoch int64) time.Time {
	if epoch == 0 {
		return time.Now().UTC().Truncate(time.Second)
	}
	return time.Unix(epoch, 0).UTC()
}

// writeFile creates path and fills it with write, removing it on failure.
func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
