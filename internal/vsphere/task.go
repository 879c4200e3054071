package vsphere

import (
	"context"
	"errors"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/progress"
	"github.com/vmware/govmomi/vim25/types"
)

// waitTask waits for a vSphere task, logging its progress, and translates a
// task failure like any other fault. It honours ctx's deadline. Each wait
// uses its own property collector, so concurrent waits cannot steal each
// other's updates; if vCenter ends the session mid-wait, the collector goes
// with it and the wait starts again in the new session.
func (c *Client) waitTask(ctx context.Context, op string, task *object.Task) (*types.TaskInfo, error) {
	fields := map[string]any{"operation": op, "task": task.Reference().Value}
	c.log.Debug(ctx, "Waiting for vSphere task", fields)
	info, err := task.WaitForResult(ctx, progressLogger{ctx: ctx, log: c.log, fields: fields})
	if errors.Is(err, errSessionRenewed) {
		c.log.Debug(ctx, "Waiting for vSphere task again in the new session", fields)
		info, err = task.WaitForResult(ctx, progressLogger{ctx: ctx, log: c.log, fields: fields})
	}
	if err != nil {
		return info, translate(op, err)
	}
	c.log.Debug(ctx, "vSphere task done", fields)
	return info, nil
}

// progressLogger turns a task's progress reports into log lines.
type progressLogger struct {
	ctx    context.Context
	log    Logger
	fields map[string]any
}

func (p progressLogger) Sink() chan<- progress.Report {
	ch := make(chan progress.Report)
	go func() {
		for r := range ch {
			fields := map[string]any{"percent": r.Percentage(), "detail": r.Detail()}
			for k, v := range p.fields {
				fields[k] = v
			}
			p.log.Debug(p.ctx, "vSphere task progress", fields)
		}
	}()
	return ch
}
