<#
.SYNOPSIS
Runs rekuiper's reliability qualification and writes its JSON report.

.DESCRIPTION
Same behaviour as scripts/run_qualification.sh:
  -Mode short  every scenario (crash, broker outage, storage faults, soak,
               upgrade/rollback), each for -Duration
  -Mode soak   the soak only, for -Duration, sampled once a minute
-Duration is seconds (10) or a Go duration (90s, 24h); -Rate is records per
second; -Report defaults to target/qualification_results.json.

Needs Go and mosquitto on PATH. The storage-fault scenario mounts a tmpfs
and the soak reads /proc, so on Windows both report an error in the report
(scenario could not run) and the run exits 1. REKUIPER_OLD_BIN and
REKUIPER_NEW_BIN select the two builds of the upgrade scenario; extra
cmd/qualify flags go in $env:QUALIFY_FLAGS. Exit code: 0 pass, 1 a broken
promise or a failed scenario, 2 the run could not start.

.EXAMPLE
./scripts/run_qualification.ps1 -Mode short -Duration 10 -Rate 100
.EXAMPLE
./scripts/run_qualification.ps1 -Mode soak -Duration 86400 -Rate 100 -Report C:\logs\rekuiper_soak_24h.json
#>
param(
    [Parameter(Mandatory = $true)][ValidateSet('short', 'soak')][string]$Mode,
    [Parameter(Mandatory = $true)][string]$Duration,
    [Parameter(Mandatory = $true)][double]$Rate,
    [string]$Report = 'target/qualification_results.json'
)
$ErrorActionPreference = 'Stop'

if ($Duration -match '^[0-9]+$') { $Duration = "${Duration}s" }

Set-Location (Join-Path $PSScriptRoot '..')
$extra = @()
if ($env:QUALIFY_FLAGS) { $extra = $env:QUALIFY_FLAGS -split '\s+' | Where-Object { $_ } }
& go run ./cmd/qualify -mode $Mode -duration $Duration -rate $Rate -report $Report @extra
exit $LASTEXITCODE
