-- Argo CD health check for vmobs' VMObservation
-- (observability.vmobs.io/v1alpha1). vmobs already folds a KubeVirt VM's
-- control plane, node, guest and storage into one verdict, in Argo CD's own words,
-- so this script only checks that the verdict is current and maps it:
--   Healthy, Progressing, Degraded, Unknown: the same word;
--   Failed (a terminal state): Degraded;
--   Suspended: Healthy when the VM is stopped as declared, else Suspended.
-- A stopped VM is what Git declared, and an Argo CD sync finishes a
-- resource only on Healthy or Degraded: Suspended would hold the sync
-- forever, as argoproj/argo-cd#29663 found for the VirtualMachine itself.
-- A pause (virtctl pause) stays Suspended: a user paused it, Git did not.
-- It calls only ipairs and tostring, from Lua's base library, which Argo
-- CD opens for every health script: an argocd-cm customization gets the
-- package, base and table libraries and a reduced os (time, date) unless
-- resource.customizations.useOpenLibs.<group>_<kind> is "true"; a built-in
-- script gets all of Lua's (argo-cd util/lua/lua.go, runLua).
local hs = {}

local generation = nil
if obj.metadata ~= nil then
  generation = obj.metadata.generation
end

if obj.status == nil then
  hs.status = "Progressing"
  if generation ~= nil then
    hs.message = "Waiting for vmobs to observe generation " .. tostring(generation)
  else
    hs.message = "Waiting for vmobs to observe the VM"
  end
  return hs
end

-- observedGeneration is set on every status write; a status older than
-- the spec (say, a policy edited in Git) says nothing about the new spec.
local observed = obj.status.observedGeneration
if observed == nil then
  observed = 0
end
if generation ~= nil and observed < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for vmobs to observe generation " .. tostring(generation)
  return hs
end

-- runStrategy is the VirtualMachine's spec.runStrategy as the control
-- plane layer cites it in its evidence, or nil without a VirtualMachine.
local function runStrategy(status)
  if status.layers == nil or status.layers.controlPlane == nil or status.layers.controlPlane.evidence == nil then
    return nil
  end
  for _, e in ipairs(status.layers.controlPlane.evidence) do
    if e.kind == "VirtualMachine" and e.field == "spec.runStrategy" then
      return e.value
    end
  end
  return nil
end

local verdict = obj.status.verdict
local reason = obj.status.reason
local message = obj.status.message
if message == nil or message == "" then
  message = reason
end
if message == nil or message == "" then
  message = verdict
end

if verdict == nil or verdict == "" then
  hs.status = "Progressing"
  hs.message = "Waiting for vmobs to reach a verdict"
elseif verdict == "Suspended" and reason == "Stopped" then
  -- vmobs' reason Stopped: no VMI and a run strategy that starts none
  -- (Halted; Manual, Once or RerunOnFailure with no start pending), or
  -- the last VMI of a Halted VM ended. Its message says so.
  hs.status = "Healthy"
  if message == reason then
    message = "the VM is stopped as declared"
  end
  hs.message = message
elseif verdict == "Suspended" and reason == "VMISucceeded" then
  -- The guest shut itself down. Once runs a VM once, RerunOnFailure
  -- reruns it only after a failure, Manual never starts it by itself:
  -- under these, a Succeeded VMI is the declared end. (Under Always
  -- vmobs says Restarting; Halted is Stopped above.) A VMI without a
  -- VirtualMachine declared nothing and stays Suspended.
  local rs = runStrategy(obj.status)
  if rs == "Once" or rs == "RerunOnFailure" or rs == "Manual" then
    hs.status = "Healthy"
    hs.message = "the VM is stopped as declared (run strategy " .. rs .. "): " .. message
  else
    hs.status = "Suspended"
    hs.message = message
  end
elseif verdict == "Healthy" or verdict == "Progressing" or verdict == "Suspended" or verdict == "Degraded" or verdict == "Unknown" then
  hs.status = verdict
  hs.message = message
elseif verdict == "Failed" then
  hs.status = "Degraded"
  hs.message = message
else
  hs.status = "Unknown"
  hs.message = "Unrecognized verdict " .. tostring(verdict) .. ": " .. tostring(message)
end
return hs
