// Package provider is the Terraform glue of the vspherehpc provider: schemas,
// plan and state mapping, and diagnostics. All vSphere work happens in
// internal/vsphere.
package provider

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/vspherehpc/terraform-provider-vspherehpc/internal/vsphere"
)

var (
	_ provider.Provider                  = (*vspherehpcProvider)(nil)
	_ provider.ProviderWithFunctions     = (*vspherehpcProvider)(nil)
	_ provider.ProviderWithListResources = (*vspherehpcProvider)(nil)
	_ provider.ProviderWithActions       = (*vspherehpcProvider)(nil)
)

// Environment variables, named as the vSphere provider names them so one
// environment serves both providers.
const (
	envServer             = "VSPHERE_SERVER"
	envUser               = "VSPHERE_USER"
	envPassword           = "VSPHERE_PASSWORD"
	envAllowUnverifiedSSL = "VSPHERE_ALLOW_UNVERIFIED_SSL"
	envCAFile             = "VSPHERE_CA_FILE"
	envPersistSession     = "VSPHERE_PERSIST_SESSION"
	// The vSphere provider's VSPHERE_VIM_SESSION_PATH holds govmomi's own
	// session files; this provider's are its own, under its own variable.
	envSessionPath = "VSPHEREHPC_SESSION_PATH"
)

type vspherehpcProvider struct {
	version string
	// clients, when set, keeps every client Configure makes, so that main
	// can log them out when Terraform stops the plugin.
	clients *vsphere.Clients
	// keepAliveIdle, when set, is the clients' vsphere.Config.KeepAliveIdle:
	// tests make sessions send keep-alives as a slow machine would.
	keepAliveIdle time.Duration
}

type providerModel struct {
	VSphereServer      types.String `tfsdk:"vsphere_server"`
	User               types.String `tfsdk:"user"`
	Password           types.String `tfsdk:"password"`
	AllowUnverifiedSSL types.Bool   `tfsdk:"allow_unverified_ssl"`
	CAFile             types.String `tfsdk:"ca_file"`
	Thumbprint         types.String `tfsdk:"thumbprint"`
	APITimeout         types.String `tfsdk:"api_timeout"`
	PersistSession     types.Bool   `tfsdk:"persist_session"`
	SessionPath        types.String `tfsdk:"session_path"`
}

// New returns the provider factory that the tests serve.
func New(version string) func() provider.Provider {
	return func() provider.Provider {
		return &vspherehpcProvider{version: version}
	}
}

// NewWithSessions returns the provider factory that main serves, and the
// vCenter clients its providers open, for main to end their sessions when
// Terraform stops the plugin. The framework offers no hook for that:
// StopProvider only cancels the requests in flight (the framework does it),
// and the process's end is when serving returns.
func NewWithSessions(version string) (factory func() provider.Provider, sessions *vsphere.Clients) {
	clients := &vsphere.Clients{}
	return func() provider.Provider {
		return &vspherehpcProvider{version: version, clients: clients}
	}, clients
}

func (p *vspherehpcProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "vspherehpc"
	resp.Version = p.version
}

func (p *vspherehpcProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Declares PVRDMA networking and GPU passthrough on vSphere. " +
			"The provider connects to vCenter only when a resource or data source needs it, " +
			"so `vspherehpc_mmio_size` works with no settings at all.",
		Attributes: map[string]schema.Attribute{
			"allow_unverified_ssl": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Skip verification of vCenter's TLS certificate. Off by default; prefer `ca_file` or `thumbprint`. " +
					"Both in the provider block is an error; otherwise a setting in the block wins over the environment, and `" +
					envCAFile + "` over `" + envAllowUnverifiedSSL + "` (a warning names what is ignored). Environment: `" +
					envAllowUnverifiedSSL + "`.",
			},
			"api_timeout": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "The longest one operation of a resource or data source may take against vCenter, as a Go duration " +
					"such as `90s` or `10m`: a read, a plan-time check (all the hosts a switch checks share it), or a change with " +
					"the tasks it waits for. Waiting for another change to the same VM does not count, and powering a VM back on " +
					"after a change gets its own. An error that says vCenter did not finish within it names this setting. Default `5m`.",
				Validators: []validator.String{positiveDuration{}},
			},
			"ca_file": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Path to a PEM bundle of the certificate authorities to trust for vCenter, for a vCenter whose certificate " +
					"is signed by the VMCA or an internal CA. Environment: `" + envCAFile + "`.",
			},
			"password": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "Password of `user`. Never written to any log. Environment: `" + envPassword + "`.",
			},
			"persist_session": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Keep the vCenter session from one run of the provider to the next instead of logging in and out " +
					"each time. One Terraform command runs the provider several times (plan, then apply), and each run otherwise logs in " +
					"and out: two of a refresh's three round trips to a remote vCenter. The session's cookie is kept in a file of its own " +
					"per server and user under `session_path`, readable by its owner alone (a file others can read or write, a symbolic " +
					"link, a directory others can write to, a file or directory of another user, or a directory under one others control " +
					"is not used); a run starts from it " +
					"with no call to vCenter, and a kept session vCenter has ended (its idle timeout, 30 minutes by default, or a " +
					"restart) is replaced at the first call. Whoever can read the file can act as `user` until the session ends, even " +
					"after the password changes. Unix only: on Windows, where the provider cannot check who may read the file, it keeps " +
					"none and says so. Off by default. Environment: `" + envPersistSession + "`.",
			},
			"session_path": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Directory of the sessions `persist_session` keeps, created readable by its owner alone if missing: " +
					"an absolute path, or one starting with `~/` for the home directory (a relative one would put the session in the " +
					"directory Terraform runs in). " +
					"Default: `vspherehpc/sessions` in the user's cache directory (`$XDG_CACHE_HOME` or `~/.cache` on Linux, " +
					"`~/Library/Caches` on macOS, `%LocalAppData%` on Windows). Environment: `" + envSessionPath + "`.",
			},
			"thumbprint": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "SHA-1 (or SHA-256) thumbprint of vCenter's certificate, with or without colons (`AB:CD:...`). " +
					"Only that exact certificate is accepted, whoever signed it, and `ca_file` is then not used. " +
					"The provider's error for an untrusted certificate prints the thumbprint vCenter presents.",
			},
			"user": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "User name to log in to vCenter with, e.g. `administrator@vsphere.local`. Environment: `" + envUser + "`.",
			},
			"vsphere_server": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "vCenter host name or address, optionally with a port (`vcenter.example.com`, `10.0.0.5:8443`). " +
					"Environment: `" + envServer + "`.",
			},
		},
	}
}

func (p *vspherehpcProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(getModel(ctx, req.Config.Schema, req.Config.Raw, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	for _, a := range []struct {
		name  string
		value attr.Value
	}{
		{"vsphere_server", cfg.VSphereServer}, {"user", cfg.User}, {"password", cfg.Password},
		{"allow_unverified_ssl", cfg.AllowUnverifiedSSL}, {"ca_file", cfg.CAFile},
		{"thumbprint", cfg.Thumbprint}, {"api_timeout", cfg.APITimeout},
		{"persist_session", cfg.PersistSession}, {"session_path", cfg.SessionPath},
	} {
		if a.value.IsUnknown() {
			resp.Diagnostics.AddAttributeError(path.Root(a.name), "Provider setting not known until apply",
				"The provider needs "+a.name+" to plan, but its value comes from a resource that does not exist yet. "+
					"Set it from a variable or a value known at plan time.")
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}

	vc := vsphere.Config{
		Server:        stringOrEnv(cfg.VSphereServer, envServer),
		User:          stringOrEnv(cfg.User, envUser),
		Password:      stringOrEnv(cfg.Password, envPassword),
		CAFile:        stringOrEnv(cfg.CAFile, envCAFile),
		Thumbprint:    cfg.Thumbprint.ValueString(),
		UserAgent:     "terraform-provider-vspherehpc/" + p.version,
		KeepAliveIdle: p.keepAliveIdle,
	}
	vc.Logger = newTFLogger(vc.Password)

	switch {
	case !cfg.AllowUnverifiedSSL.IsNull():
		vc.AllowUnverifiedSSL = cfg.AllowUnverifiedSSL.ValueBool()
	case os.Getenv(envAllowUnverifiedSSL) != "":
		b, err := strconv.ParseBool(os.Getenv(envAllowUnverifiedSSL))
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("allow_unverified_ssl"), "Invalid "+envAllowUnverifiedSSL,
				envAllowUnverifiedSSL+" must be true or false, not "+strconv.Quote(os.Getenv(envAllowUnverifiedSSL))+".")
		}
		vc.AllowUnverifiedSSL = b
	}

	// No settings at all is valid: data sources such as vspherehpc_mmio_size
	// need no vCenter. Some settings but not all is a mistake worth naming.
	anySet := vc.Server != "" || vc.User != "" || vc.Password != ""
	if anySet {
		for _, s := range []struct{ attr, env, value string }{
			{"vsphere_server", envServer, vc.Server}, {"user", envUser, vc.User}, {"password", envPassword, vc.Password},
		} {
			if s.value == "" {
				resp.Diagnostics.AddAttributeError(path.Root(s.attr), "Missing vCenter "+s.attr,
					"The provider has part of a vCenter login but no "+s.attr+". Set "+s.attr+" in the provider block or the "+s.env+" environment variable.")
			}
		}
	}
	resolveTLSConflict(&vc, !cfg.AllowUnverifiedSSL.IsNull(), inBlock(cfg.CAFile), &resp.Diagnostics)
	if vc.CAFile != "" {
		if problem := caFileProblem(vc.CAFile); problem != "" {
			// Blame the setting the value came from: a variable left in the
			// environment is not the provider block's ca_file.
			fix := "Point it at a PEM file holding the CA certificate(s) that signed vCenter's certificate (several CAs go in one file, one after another)."
			if !inBlock(cfg.CAFile) {
				resp.Diagnostics.AddError("Unusable CA file", "Cannot use "+envCAFile+" (environment variable): "+problem+". "+fix)
			} else {
				resp.Diagnostics.AddAttributeError(path.Root("ca_file"), "Unusable CA file", "Cannot use ca_file: "+problem+". "+fix)
			}
		}
	}
	if vc.Thumbprint != "" {
		tp, err := vsphere.NormalizeThumbprint(vc.Thumbprint)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("thumbprint"), "Invalid certificate thumbprint", "Cannot use thumbprint: "+err.Error()+".")
		}
		vc.Thumbprint = tp
	}
	if vc.Server != "" {
		host, err := vsphere.ParseServer(vc.Server)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("vsphere_server"), "Invalid vCenter address",
				"Cannot use vsphere_server (or VSPHERE_SERVER): "+serverProblem(err)+". Give a host name or address, optionally with a port.")
		}
		vc.Server = host
	}
	if s := cfg.APITimeout.ValueString(); s != "" {
		vc.APITimeout, _ = time.ParseDuration(s) // checked by the schema's validator
	}
	vc.SessionDir = sessionDir(cfg, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}

	tflog.Debug(ctx, "Configured vspherehpc provider", map[string]any{
		"vsphere_server": vc.Server, "vsphere_user": vc.User, "allow_unverified_ssl": vc.AllowUnverifiedSSL,
		"ca_file": vc.CAFile, "thumbprint_pinned": vc.Thumbprint != "", "connects_lazily": true, "session_path": vc.SessionDir,
	})
	client := vsphere.New(vc)
	if p.clients != nil {
		p.clients.Add(client)
	}
	resp.DataSourceData = client
	// Terraform configures the provider anew for each walk (plan, apply):
	// one claim book per walk.
	resp.ResourceData = &resourceData{client: client, claims: newClaimBook()}
	resp.ListResourceData = client
	resp.ActionData = client
}

// sessionDir is where persist_session keeps sessions, or "" when it is off.
func sessionDir(cfg providerModel, diags *diag.Diagnostics) string {
	persist := cfg.PersistSession.ValueBool()
	if cfg.PersistSession.IsNull() && os.Getenv(envPersistSession) != "" {
		b, err := strconv.ParseBool(os.Getenv(envPersistSession))
		if err != nil {
			diags.AddAttributeError(path.Root("persist_session"), "Invalid "+envPersistSession,
				envPersistSession+" must be true or false, not "+strconv.Quote(os.Getenv(envPersistSession))+".")
		}
		persist = b
	}
	dir := stringOrEnv(cfg.SessionPath, envSessionPath)
	notKept := func(why string) string {
		diags.AddAttributeWarning(path.Root("session_path"), "Sessions not kept",
			why+" Every run logs in and out, as without persist_session.")
		return ""
	}
	switch {
	case !persist:
		if !cfg.SessionPath.IsNull() {
			diags.AddAttributeWarning(path.Root("session_path"), "session_path not used",
				"session_path is where persist_session keeps sessions, and persist_session is off: the provider logs in and out "+
					"on every run. Set persist_session = true, or remove session_path.")
		}
		return ""
	case dir == "":
		cache, err := os.UserCacheDir()
		if err != nil {
			return notKept("persist_session needs a directory to keep sessions in, and this machine has no user cache directory (" +
				err.Error() + "). Set session_path, or " + envSessionPath + ".")
		}
		dir = filepath.Join(cache, "vspherehpc", "sessions")
	case strings.HasPrefix(dir, "~/") || strings.HasPrefix(dir, "~"+string(filepath.Separator)):
		// As a shell would, and the vSphere provider does for its session paths.
		home, err := os.UserHomeDir()
		if err != nil {
			return notKept("session_path " + dir + " starts with ~, and this machine has no home directory (" + err.Error() +
				"). Give session_path as an absolute path.")
		}
		dir = filepath.Join(home, dir[2:])
	}
	if !filepath.IsAbs(dir) {
		diags.AddAttributeError(path.Root("session_path"), "session_path is not absolute",
			"Give session_path as an absolute path or one starting with ~/, not "+strconv.Quote(dir)+": a relative one would "+
				"be created in the directory Terraform runs in, where a session file could be committed with the configuration.")
		return ""
	}
	switch err := vsphere.UnsafeSessionDir(dir); {
	case errors.Is(err, vsphere.ErrSessionDirNotADirectory):
		diags.AddAttributeError(path.Root("session_path"), "session_path is not a directory",
			"Cannot keep sessions in "+dir+": it is a file. Name a directory (it is created if missing).")
	case errors.Is(err, vsphere.ErrSessionDirWritable):
		return notKept("Others than its owner may write to " + dir + ", so the provider neither keeps a session there nor resumes one: " +
			"a file put there could make it act as somebody else. Make the directory writable by its owner alone " +
			"(chmod go-w), or name another.")
	case errors.Is(err, vsphere.ErrSessionDirNotOwned):
		return notKept(dir + " belongs to another user, so the provider neither keeps a session there nor resumes one. " +
			"Name a directory of your own.")
	case errors.Is(err, vsphere.ErrSessionDirParentUnsafe):
		return notKept("The provider neither keeps a session in " + dir + " nor resumes one there: " + err.Error() +
			". Whoever controls a directory above it could put a directory of their own in its place, as ssh refuses for its " +
			"keys. Name a directory whose parents belong to you or root and only their owners may write to (or are sticky, as /tmp is).")
	case errors.Is(err, vsphere.ErrSessionsUnchecked):
		return notKept("On this system the provider cannot check that only you can read a session file (" + err.Error() +
			"), so it keeps none.")
	}
	return dir
}

// caFileProblem says why a CA file cannot be used, or "" when it can. A
// directory is named as one: os.ReadFile's "is a directory" reads as if the
// PEM file were inside it.
func caFileProblem(name string) string {
	if fi, err := os.Stat(name); err == nil && fi.IsDir() {
		return name + " is a directory, not a PEM file"
	}
	if err := vsphere.ReadCAFile(name); err != nil {
		return err.Error()
	}
	return ""
}

// stringOrEnv is a setting of the provider block, or else its environment
// variable. An empty string counts as unset, as in the vSphere provider (its
// SDK reads "" as no value): a module passing vsphere_server = var.server
// whose default is "" must not hide VSPHERE_SERVER.
func stringOrEnv(v types.String, env string) string {
	if inBlock(v) {
		return v.ValueString()
	}
	return os.Getenv(env)
}

// inBlock reports whether a string setting is set in the provider block.
func inBlock(v types.String) bool { return !v.IsNull() && v.ValueString() != "" }

// resolveTLSConflict settles skipping verification beside a CA file or a
// thumbprint. Both in the provider block is an error. Otherwise a setting in
// the block wins over the environment, and between two environment
// variables VSPHERE_CA_FILE wins: the vSphere provider has no CA setting, so
// an environment shared by both providers holds VSPHERE_ALLOW_UNVERIFIED_SSL
// for that provider, and VSPHERE_CA_FILE only for this one. What is ignored
// is a warning that names it.
func resolveTLSConflict(vc *vsphere.Config, unverifiedInBlock, caInBlock bool, diags *diag.Diagnostics) {
	if !vc.AllowUnverifiedSSL || (vc.CAFile == "" && vc.Thumbprint == "") {
		return
	}
	verifier := "thumbprint"
	if vc.Thumbprint == "" {
		verifier = "ca_file"
		if !caInBlock {
			verifier = envCAFile
		}
	}
	switch {
	case unverifiedInBlock && (vc.Thumbprint != "" || caInBlock):
		diags.AddAttributeError(path.Root("allow_unverified_ssl"), "Conflicting TLS settings",
			"allow_unverified_ssl turns certificate verification off, so ca_file and thumbprint would be ignored. "+
				"Keep verification on with ca_file or thumbprint, or remove them to skip verification.")
	case unverifiedInBlock:
		diags.AddAttributeWarning(path.Root("allow_unverified_ssl"), envCAFile+" ignored",
			"allow_unverified_ssl = true in the provider block turns certificate verification off, so the CA file "+
				envCAFile+" names is not used. Remove one of them to make the choice explicit.")
		vc.CAFile = ""
	default:
		diags.AddAttributeWarning(path.Root("allow_unverified_ssl"), envAllowUnverifiedSSL+" ignored",
			envAllowUnverifiedSSL+" is set, but "+verifier+" keeps certificate verification on, and wins: the environment "+
				"variable is likely meant for the vSphere provider, which has no CA setting. To skip verification in this "+
				"provider, set allow_unverified_ssl = true in its block and no ca_file or thumbprint.")
		vc.AllowUnverifiedSSL = false
	}
}

func (p *vspherehpcProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewHostPCIPassthroughResource,
		NewHostPVRDMASettingsResource,
		NewHostSRIOVResource,
		NewHostGraphicsResource,
		NewRDMADVSResource,
		NewVMPVRDMANICResource,
		NewVMSRIOVNICResource,
		NewVMGPUMMIOResource,
	}
}

func (p *vspherehpcProvider) ListResources(_ context.Context) []func() list.ListResource {
	return []func() list.ListResource{
		NewHostPCIPassthroughListResource,
		NewHostPVRDMASettingsListResource,
		NewHostSRIOVListResource,
		NewHostGraphicsListResource,
		NewRDMADVSListResource,
		NewVMPVRDMANICListResource,
		NewVMSRIOVNICListResource,
		NewVMGPUMMIOListResource,
	}
}

func (p *vspherehpcProvider) Actions(_ context.Context) []func() action.Action {
	return []func() action.Action{NewHostRebootAction, NewVMPowerAction}
}

func (p *vspherehpcProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewClusterDataSource,
		NewDatacenterDataSource,
		NewHostDataSource,
		NewMaxMTUDataSource,
		NewMMIOSizeDataSource,
		NewVirtualMachineDataSource,
	}
}

func (p *vspherehpcProvider) Functions(_ context.Context) []func() function.Function {
	return []func() function.Function{
		NewMMIOExtraConfigFunction,
		NewMMIOSizeGBFunction,
	}
}
