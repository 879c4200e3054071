package acctest

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// TerraformPath is the terraform binary under test, found as
// terraform-plugin-testing finds it: TF_ACC_TERRAFORM_PATH, else terraform
// on PATH.
func TerraformPath() (string, error) {
	if tf := os.Getenv("TF_ACC_TERRAFORM_PATH"); tf != "" {
		return tf, nil
	}
	return exec.LookPath("terraform")
}

// Wording matches text as Terraform prints it in a diagnostic, where any
// space may have become a line break.
func Wording(text string) *regexp.Regexp {
	return regexp.MustCompile(strings.Join(strings.Fields(regexp.QuoteMeta(text)), `\s+`))
}
